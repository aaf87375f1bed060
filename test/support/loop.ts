// A loop block device over a file in a test's folder, for the tests that read a real block
// device; undefined with the reason where none can be attached (no root, no loop driver).
import { execa } from 'execa';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LoopDevice { device?: string; why: string; detach: () => Promise<void> }

/** Attaches a loop device over a new file of `bytes` zero bytes in dir. */
export async function attachLoopDevice(dir: string, bytes: number): Promise<LoopDevice> {
  const backing = join(dir, `loop-${process.pid}.img`);
  writeFileSync(backing, Buffer.alloc(bytes));
  const r = await execa('losetup', ['--find', '--show', backing], { reject: false })
    .catch((err: Error) => ({ exitCode: 1, stdout: '', stderr: err.message }));
  if (r.exitCode !== 0) return { why: String(r.stderr).trim() || `losetup exited ${r.exitCode}`, detach: async () => {} };
  const device = String(r.stdout).trim();
  return { device, why: '', detach: async () => { await execa('losetup', ['-d', device]); } };
}
