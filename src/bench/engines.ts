// The storage engines as the CLI sees them, all read from the native engine table: names and
// the spellings users type, the engines' own options (each becomes a --<name> flag of bench
// iops), and the depth limit each engine has. Adding an engine or a knob in C needs nothing here.
import { Option } from 'commander';
import { native, type BenchEngineInfo, type BenchEngineOption } from '../native.js';
import { UserError } from '../cli-util.js';
import { boolOption, checkNumber, numberOption } from '../numbers.js';

/** Every engine, test-only ones included (they run when named, but help and 'all' omit them). */
const table: BenchEngineInfo[] = native.benchEngines;

/** The engines 'all' runs (the comparison): every engine but the test-only ones and those that
 * run only when named. */
export const ENGINES: string[] = table.filter((e) => !e.testOnly && !e.namedOnly).map((e) => e.name);

/** The engines a user is offered by name: help, the error for an unknown name (fio's null,
 * pvsync and pvsync2 beside the engines of 'all'). */
export const ENGINE_NAMES: string[] = table.filter((e) => !e.testOnly).map((e) => e.name);

/** The runner's own depth limit (any engine): buffers are allocated per slot. */
export const MAX_IODEPTH = 65536;

export function engineInfo(name: string): BenchEngineInfo | undefined {
  return table.find((e) => e.name === name || e.alias === name);
}

/** "io_uring,libaio" or "all" -> engine names (an alias such as posix_aio gives the engine's
 * name); an unknown name is a UserError listing the known ones. */
export function parseEngines(value: string): string[] {
  if (value.trim() === 'all') return [...ENGINES];
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw new UserError(`expected an engine name, a comma list or 'all'`);
  return names.map((raw) => {
    const engine = engineInfo(raw);
    if (!engine) throw new UserError(`unknown ioengine '${raw}' (known: ${ENGINE_NAMES.join(', ')}, all)`);
    return engine.name;
  });
}

/** Each option of each engine's table, once (engines may share an option name). */
function allOptions(): { option: BenchEngineOption; engines: BenchEngineInfo[] }[] {
  const out: { option: BenchEngineOption; engines: BenchEngineInfo[] }[] = [];
  for (const e of table) {
    for (const o of e.options) {
      const seen = out.find((x) => x.option.name === o.name);
      if (seen) seen.engines.push(e);
      else out.push({ option: o, engines: [e] });
    }
  }
  return out;
}

/** The engines whose table has an option of this name (undefined: no engine's option). */
export function engineOptionOwners(name: string): string[] | undefined {
  return allOptions().find((x) => x.option.name === name)?.engines.map((e) => e.name);
}

/** The commander options for the engines' own knobs: --fixedbufs[=0|1], --test_delay_usec <n>. */
export function engineOptionFlags(): Option[] {
  return allOptions().map(({ option, engines }) => {
    const flag = option.type === 'bool'
      ? new Option(`--${option.name} [0|1]`, `${option.help}; default ${option.default}, bare --${option.name} is 1`).argParser(boolOption())
      : new Option(`--${option.name} <n>`, `${option.help}; default ${option.default}`)
        .argParser(numberOption({ min: option.min, max: option.max }));
    return engines.every((e) => e.testOnly) ? flag.hideHelp() : flag;
  });
}

/** The engine options a user gave (commander keys them by name), for the job's engineOptions.
 * An option none of the chosen engines has is refused: it would silently do nothing. */
export function engineOptionsFrom(opts: Record<string, unknown>, engines: string[]): Record<string, number | boolean> {
  const given: Record<string, number | boolean> = {};
  for (const { option, engines: owners } of allOptions()) {
    const value = opts[option.name];
    if (value === undefined) continue;
    if (!owners.some((o) => engines.includes(o.name))) {
      throw new UserError(`--${option.name} is an option of ${owners.map((o) => o.name).join(', ')}, ` +
        `which --ioengine does not include`);
    }
    given[option.name] = value as number | boolean;
  }
  return given;
}

/** An iodepth beyond what one of the chosen engines can queue is refused up front, naming the
 * limit (io_uring's entry limit), not left to fail inside the engine. */
export function checkDepth(iodepth: number, engines: string[]): void {
  for (const name of engines) {
    const e = engineInfo(name);
    if (e?.maxDepth !== undefined) {
      try {
        checkNumber('--iodepth', iodepth, { min: 1, max: e.maxDepth, maxReason: e.maxDepthReason });
      } catch (err) {
        throw new UserError((err as Error).message);
      }
    }
  }
}
