// What every bench JSON reader of the report shares: the machine and command a run recorded,
// whether it was cut short, and lenient reads of its fields (a file from an older or a newer
// iolab still charts).

export interface Machine {
  kernel?: string;
  cpuModel?: string;
  cores?: number;
  memoryBytes?: number;
  hostname?: string;
  fileSystem?: { type?: string; mountPoint?: string; source?: string; device?: string };
}

export interface Common {
  file: string;
  machine?: Machine;
  command?: string[];
  /** Why the run's figures cover less than it was asked to run ("interrupted by SIGINT"). */
  partial?: string;
}

/** A row of one of the ratio tables under an input's charts. */
export interface Ratio { table: string; name: string; value: number; note?: string }

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/** How each benchmark says it was interrupted: bench api's partial text, bench ipc's partial
 * object, `interrupted: true` (bench iops, latency, testIOPS mode) with bench echo's signal. */
function partialOf(json: Json): string | undefined {
  if (typeof json.partial === 'string') return json.partial;
  if (isObject(json.partial)) return `interrupted by ${String(json.partial.interruptedBy ?? 'a signal')}`;
  if (json.interrupted === true) return `interrupted${typeof json.signal === 'string' ? ` by ${json.signal}` : ''}`;
  return undefined;
}

export function common(file: string, json: Json): Common {
  const command = Array.isArray(json.command) ? json.command.map(String) : typeof json.command === 'string' ? [json.command] : undefined;
  const partial = partialOf(json);
  return { file, machine: isObject(json.machine) ? (json.machine as Machine) : undefined, command, ...(partial ? { partial } : {}) };
}

