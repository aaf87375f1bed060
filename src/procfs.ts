// A process's state: /proc/<pid>/stat read once (the fields after the command name, which may
// hold spaces and parentheses, so the split starts after its last ')'; fields[0] is the state
// letter, fields[1] the parent pid, fields[11] and fields[12] utime and stime in USER_HZ, 100
// here), and whether a pid runs at all.
import { readFileSync } from 'node:fs';

/** The stat fields of pid from its state on, or undefined when it is gone. */
export function procStatFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The CPU time (user + system, every thread) pid has used, in clock ticks (USER_HZ, 100/s),
 * or undefined when it is gone. */
export function cpuTicks(pid: number): number | undefined {
  const fields = procStatFields(pid);
  return fields ? Number(fields[11]) + Number(fields[12]) : undefined;
}

/** The CPU time one thread (tid, the process's first by default) has run, in ns: the first field
 * of /proc/<pid>/task/<tid>/schedstat; undefined when it is gone. */
export function threadCpuNs(pid: number, tid = pid): number | undefined {
  try {
    const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns : undefined;
  } catch {
    return undefined;
  }
}

/** Whether pid runs (as anyone's: EPERM means it exists). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
