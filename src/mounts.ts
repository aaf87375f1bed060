// Which mount holds a path (/proc/self/mountinfo), and the kernel's own file systems: /dev,
// /proc, /sys and their kin hold device nodes and the kernel's views, never a user's files.
// iolab creates nothing there (a mistyped /dev/sdz would become a file in memory, measured as
// if it were the disk) and benchmarks no file there but an existing device node.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export interface Mount { type: string; mountPoint: string; source: string }

/** File systems that hold no regular files to benchmark (the kernel's views and control files). */
export const pseudoFileSystems = new Set(['proc', 'sysfs', 'debugfs', 'tracefs', 'securityfs', 'cgroup', 'cgroup2',
  'devpts', 'bpf', 'pstore', 'configfs', 'fusectl', 'mqueue', 'binfmt_misc', 'efivarfs', 'autofs']);

/** The mount (from /proc/self/mountinfo) that holds path: the longest matching mount point. A
 * path that does not exist yet counts as its nearest existing parent. */
export function mountOf(path: string): Mount | undefined {
  let target = resolve(path);
  while (!existsSync(target) && dirname(target) !== target) target = dirname(target);
  const real = realpathSync(target);
  let best: Mount | undefined;
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const mountPoint = left.split(' ')[4].replace(/\\040/g, ' ');
    const [type, source] = right.split(' ');
    const inside = real === mountPoint || real.startsWith(mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`);
    if (inside && (!best || mountPoint.length >= best.mountPoint.length)) best = { type, mountPoint, source };
  }
  return best;
}

/** Where a new file at path would land when that is one of the kernel's own file systems
 * ("/dev (devtmpfs)"); undefined for a user's file system (a disk, tmpfs, /dev/shm). */
export function kernelFolderOf(path: string): string | undefined {
  const mount = mountOf(path);
  if (!mount) return undefined;
  const kernel = ['/dev', '/proc', '/sys'].includes(mount.mountPoint) || mount.type === 'devtmpfs' || pseudoFileSystems.has(mount.type);
  return kernel ? `${mount.mountPoint} (${mount.type})` : undefined;
}
