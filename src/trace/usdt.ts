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
  { name: 'ring_queue', when: 'a Ring op\'s SQE is prepared (when the JS call queues it, or when it leaves the backlog of a full SQ)',
    args: ['op: the SQE\'s user_data', 'opcode (IORING_OP_*)', 'fd', 'bytes of its buffers'] },
  { name: 'ring_submit', when: 'the Ring submits its prepared SQEs (once per loop turn)', args: ['ring fd', 'SQEs to submit'] },
  { name: 'ring_complete', when: 'a CQE is reaped on the JS thread', args: ['op', 'result (bytes or -errno)'] },
  { name: 'ring_settle', when: 'the op\'s Promise has been resolved or rejected', args: ['op', 'result'] },
  { name: 'io_issue', when: 'a storage job hands an I/O to its engine (docs/storage.md)', args: ['offset', 'bytes', '1 for a write, 0 for a read'] },
  { name: 'io_complete', when: 'a storage job takes an I/O\'s completion', args: ['offset', 'bytes asked', 'result (bytes or -errno)'] },
  { name: 'echo_accept', when: 'a native echo server (uring, epoll) accepts a connection, served or refused (docs/echo.md)', args: ['fd'] },
  { name: 'echo_close', when: 'a native echo server closes a connection', args: ['fd'] },
];

/** The addon file the probes live in (the sanitized build's with IOLAB_ASAN=1). */
export function usdtBinary(): string {
  return addonPath();
}
