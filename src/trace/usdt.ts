// The USDT probes in the addon (provider `iolab`, from <sys/sdt.h>), as docs/trace.md lists
// them: `bpftrace -l 'usdt:build/Release/iolab.node:*'` shows the same names (tested).
import { addonPath } from '../native.js';

export interface UsdtProbe {
  name: string;
  /** What fires it. */
  when: string;
  /** arg0, arg1, ... in order. */
  args: string[];
}

export const usdtProvider = 'iolab';

export const usdtProbes: readonly UsdtProbe[] = [
  { name: 'ring_queue', when: 'a Ring op is queued (its SQE prepared, or put on the backlog when the SQ is full)',
    args: ['op (the user_data of its SQE)', 'opcode (IORING_OP_*)', 'fd', 'bytes asked for'] },
  { name: 'ring_submit', when: 'the Ring is about to submit its queued SQEs (once per loop turn)',
    args: ['ring fd', 'SQEs to submit'] },
  { name: 'ring_complete', when: 'a CQE of an op is reaped on the JS thread',
    args: ['op', 'opcode', 'result (bytes or -errno)'] },
  { name: 'ring_settle', when: 'the op\'s Promise has been resolved or rejected',
    args: ['op', 'opcode', 'result'] },
];

/** The addon file the probes live in (the sanitized build's with IOLAB_ASAN=1). */
export function usdtBinary(): string {
  return addonPath();
}
