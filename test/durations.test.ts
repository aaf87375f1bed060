// Every duration option of the program, read from the commander program itself, follows one
// rule (src/numbers.ts): it takes a unit (500ms, 2s, 1m), and a bare number is seconds, or is
// refused where it once meant another unit (bench api --duration: milliseconds), so no old
// command line silently changes meaning; its help says which. fio's job options (bench iops)
// keep fio's units, as fio reads them. `fdpass recv --timeout 3000` was 3000 s while its help
// read as milliseconds; bench api's --duration was milliseconds and bench http's seconds.
import { describe, expect, it } from 'vitest';
import type { Command, Option } from 'commander';
import { buildProgram } from '../src/program.js';
import { runCliText } from './support/cli.js';

interface DurationOption { command: string; flags: string; help: string; parse: (v: string) => number; bareWas?: string }

/** Options that speak of time, and the duration options among them, of every command but fio's. */
async function timeOptions(): Promise<{ all: string[]; durations: DurationOption[] }> {
  const program = await buildProgram([]);
  const all: string[] = [];
  const durations: DurationOption[] = [];
  const walk = (cmd: Command, names: string[]) => {
    const name = names.join(' ');
    for (const o of cmd.options as Option[]) {
      if (!o.required && !o.optional) continue; // a flag takes no value
      const speaksOfTime = /duration|timeout|<(time|sec|secs|seconds|ms)>/i.test(o.flags);
      if (speaksOfTime && name !== 'bench iops') all.push(`${name} ${o.long}`);
      const parser = o.parseArg as (((v: string) => number) & { duration?: true; rule?: { bareWas?: string } }) | undefined;
      if (parser?.duration) {
        durations.push({ command: name, flags: o.flags, help: o.description, parse: (v) => parser(v), bareWas: parser.rule?.bareWas });
      }
    }
    for (const sub of cmd.commands) walk(sub, [...names, sub.name()]);
  };
  for (const sub of program.commands) walk(sub, [sub.name()]);
  return { all, durations };
}

describe('durations, every option of the program', () => {
  it('each option that speaks of time is a duration: a unit everywhere, a bare number seconds or refused, as its help says', async () => {
    const { all, durations } = await timeOptions();
    const ours = durations.filter((d) => d.command !== 'bench iops');
    expect(ours.map((d) => `${d.command} ${d.flags.split(/[ ,]+/).find((f) => f.startsWith('--'))}`).sort()).toEqual(all.sort());
    expect(ours.map((d) => d.command).sort()).toEqual(['bench api', 'bench echo', 'bench http', 'bench ipc', 'echo bench', 'echo server', 'fdpass recv', 'handoff']);
    for (const d of ours) {
      const what = `${d.command} ${d.flags}`;
      expect(d.parse('2s'), what).toBe(2000);
      expect(d.parse('1m'), what).toBe(60_000);
      if (d.bareWas !== undefined) {
        expect(() => d.parse('300'), what).toThrow(`a bare number here was ${d.bareWas}, and is seconds elsewhere in iolab: give the unit, 300ms or 300s, got '300'`);
        expect(d.help, what).toMatch(/with its unit/);
      } else {
        expect(d.parse('3'), what).toBe(3000);
        expect(d.help, what).toMatch(/a bare number is seconds/);
        expect(d.help, what).not.toMatch(/in milliseconds/);
      }
    }
  });

  it('fdpass recv --timeout 3000 is 3000 s, as its help says; bench api --duration 300 is refused, 300ms taken', async () => {
    const { durations } = await timeOptions();
    const timeout = durations.find((d) => d.command === 'fdpass recv')!;
    expect(timeout.parse('3000')).toBe(3_000_000);
    expect(timeout.help).toContain('a bare number is seconds');
    const r = await runCliText(['bench', 'api', '--duration', '300', '--rounds', '1', '--groups', 'read']);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: "iolab: option '--duration <time>' argument '300' is invalid. a bare number here was milliseconds, " +
      "and is seconds elsewhere in iolab: give the unit, 300ms or 300s, got '300'" });
    const ok = await runCliText(['bench', 'api', '--duration', '5ms', '--rounds', '1', '--groups', 'read', '--only', 'fs.read', '--size', '64k']);
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^bench api: .*; 1 rounds of 5 ms, alternating; medians$/m);
  });

  it('bench http takes whole seconds (wrk\'s -d): 500ms is refused in one line before anything runs', async () => {
    expect(await runCliText(['bench', 'http', '--duration', '500ms'])).toEqual({ exitCode: 1, stdout: '',
      stderr: "iolab: option '--duration <time>' argument '500ms' is invalid. expected whole seconds (such as 5 or 5s; 1s or more), got '500ms'" });
  });
});
