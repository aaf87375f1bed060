// Children that must not outlive iolab (echo servers, the load generator in its namespace,
// bench ipc's receiver) die with the process that started them, even when that one is
// SIGKILLed. The parent starts them with childEnv(); the child calls dieWithParentIfAsked()
// as it starts, which sets PR_SET_PDEATHSIG (native/parent_death.cc): Node has no spawn option
// for it, and a child polling its parent would leave it serving for a while.
import { native } from './native.js';

export const parentPidVariable = 'IOLAB_PARENT_PID';

/** The environment for a child that must end with this process. */
export function childEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, [parentPidVariable]: String(process.pid) };
}

/** In a child started with childEnv(): die with the parent from now on (at once when it has
 * already gone). The variable is removed, so this process's own children are not told a
 * parent that is not theirs. */
export function dieWithParentIfAsked(): void {
  const value = process.env[parentPidVariable];
  if (value === undefined) return;
  delete process.env[parentPidVariable];
  const parent = Number(value);
  if (Number.isInteger(parent) && parent > 0) native.dieWithParent(parent);
}
