// What every benchmark's JSON says about where it ran: the kernel, the CPU, the memory, and the
// file system and device under the path it measured. Charts and reports show it beside each
// figure, so a number is never read without its machine.
import { cpus, release, totalmem, hostname } from 'node:os';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { mountOf } from '../mounts.js';

export interface MachineInfo {
  hostname: string;
  kernel: string;
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  /** The file system type and mount point of `path`, and its block device (none on tmpfs). */
  fileSystem?: { type: string; mountPoint: string; source: string; device?: string };
}

/** The sysfs folder (/sys/devices/...) of the block device a path lives on (or is), when it
 * has one; a path that does not exist yet counts as its nearest existing parent. */
export function blockDeviceDir(path: string): string | undefined {
  let target = resolve(path);
  while (!existsSync(target) && dirname(target) !== target) target = dirname(target);
  const st = statSync(target, { bigint: true });
  const dev = st.isBlockDevice() ? st.rdev : st.dev;
  const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
  const minor = Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));
  const sys = `/sys/dev/block/${major}:${minor}`;
  return existsSync(sys) ? realpathSync(sys) : undefined;
}

/** The block device (sysfs name, e.g. "vda") a path lives on, when it has one. */
export function blockDeviceOf(path: string): string | undefined {
  return blockDeviceDir(path)?.split('/').pop();
}

export function machineInfo(path?: string): MachineInfo {
  const list = cpus();
  const info: MachineInfo = {
    hostname: hostname(),
    kernel: release(),
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryBytes: totalmem(),
  };
  if (path !== undefined) {
    const mount = mountOf(path);
    if (mount) info.fileSystem = { ...mount, device: blockDeviceOf(path) };
  }
  return info;
}
