// The one number parser (src/numbers.ts): what it accepts, what it refuses, and how its errors
// read, as properties over arbitrary input and through the CLI where a user meets it.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkNumber, formatSize, parseDuration, parseNumberList, parseWholeNumber } from '../src/numbers.js';
import { showDefault } from '../src/cli-util.js';
import { iolabArgv, runCli } from './support/cli.js';

const units: [string, number][] = [['', 1], ['k', 1024], ['K', 1024], ['m', 2 ** 20], ['g', 2 ** 30], ['t', 2 ** 40]];

describe('parseWholeNumber', () => {
  it('reads every decimal whole number back exactly', () => {
    fc.assert(fc.property(fc.maxSafeNat(), (n) => {
      expect(parseWholeNumber(String(n))).toBe(n);
    }));
  });

  it('reads sizes with k/m/g/t as fio does (binary), with or without B', () => {
    fc.assert(fc.property(fc.nat({ max: 4096 }), fc.constantFrom(...units), fc.constantFrom('', 'b', 'B'), (n, [u, scale], tail) => {
      expect(parseWholeNumber(`${n}${u}${u === '' ? '' : tail}`, { size: true })).toBe(n * scale);
    }));
  });

  it('refuses KiB, MiB, GiB, TiB with the reason: fio (kb_base=1024) reads them as powers of 1000', () => {
    fc.assert(fc.property(fc.nat({ max: 4096 }), fc.constantFrom(...units.filter(([u]) => u !== '')), fc.constantFrom('iB', 'ib', 'IB'),
      (n, [u, scale], tail) => {
        const power = Math.round(Math.log2(scale) / 10);
        expect(() => parseWholeNumber(`${n}${u}${tail}`, { size: true })).toThrow(
          `'${n}${u}${tail}': fio reads ${u}${tail} as a power of 1000 (${n}${u}${tail} = ${n * 1000 ** power} bytes), so iolab does ` +
          `not take it; write ${n}${u.toLowerCase()} for ${n * scale} bytes, or ${n * 1000 ** power}`);
      }));
  });

  it('refuses anything that is not a decimal whole number: hex, exponents, signs, fractions, words', () => {
    const refused = fc.oneof(
      fc.nat().map((n) => `0x${n.toString(16)}`),
      fc.nat({ max: 99 }).map((n) => `${n}e1`),
      fc.nat().map((n) => `-${n}`),
      fc.nat().map((n) => `+${n}`),
      fc.nat().map((n) => `${n}.5`),
      fc.constantFrom('', ' ', 'yes', 'true', 'Infinity', 'NaN', '1_000', '1,000', '0b1', '0o7', '1 2'),
      fc.string().filter((s) => !/^\s*\d+\s*$/.test(s)),
    );
    fc.assert(fc.property(refused, (text) => {
      expect(() => parseWholeNumber(text, { min: 0 })).toThrow(/^expected a whole number >= 0, got '/);
    }));
  });

  it('refuses a size suffix on an option that is not a size', () => {
    expect(() => parseWholeNumber('4k')).toThrow("expected a whole number >= 0, got '4k'");
  });

  it('keeps the limits of the option, and says why the maximum is the maximum', () => {
    fc.assert(fc.property(fc.nat({ max: 100 }), fc.nat({ max: 100 }), fc.nat({ max: 300 }), (a, b, v) => {
      const [min, max] = a <= b ? [a, b] : [b, a];
      const ok = v >= min && v <= max;
      if (ok) expect(parseWholeNumber(String(v), { min, max })).toBe(v);
      else expect(() => parseWholeNumber(String(v), { min, max })).toThrow(`expected a whole number from ${min} to ${max}, got '${v}'`);
    }));
    expect(() => parseWholeNumber('65536', { min: 1, max: 32768, maxReason: "io_uring's entry limit" }))
      .toThrow("expected a whole number from 1 to 32768 (io_uring's entry limit), got '65536'");
  });

  it('refuses numbers too large to be exact', () => {
    expect(() => parseWholeNumber('9007199254740993')).toThrow(/expected a whole number/);
    expect(() => parseWholeNumber('99999999t', { size: true })).toThrow(/expected a size/);
  });
});

describe('lists, checks of other sources, durations, and how defaults are shown', () => {
  it('parses comma lists with the same rule, and refuses empty items', () => {
    expect(parseNumberList('4k,64k, 1m', { min: 1, size: true })).toEqual([4096, 65536, 2 ** 20]);
    expect(() => parseNumberList('0x10,1e1', { min: 1 })).toThrow("expected a whole number >= 1, got '0x10'");
    expect(() => parseNumberList('1,,2', { min: 1 })).toThrow(/comma-separated list/);
  });

  it('names the option as the user types it', () => {
    expect(() => checkNumber('iodepth', 0, { min: 1 })).toThrow("--iodepth: expected a whole number >= 1, got '0'");
    expect(() => checkNumber('--bs', '4x', { min: 1, size: true })).toThrow(/^--bs: expected a size/);
    expect(() => checkNumber('iodepth', 1.5, { min: 1 })).toThrow(/^--iodepth: expected a whole number >= 1/);
    expect(checkNumber('bs', '4k', { size: true })).toBe(4096);
  });

  it('reads fio time values', () => {
    expect(parseDuration('10')).toBe(10_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('2s')).toBe(2000);
    expect(parseDuration('1m')).toBe(60_000);
    expect(parseDuration('0', { zero: true })).toBe(0);
    for (const bad of ['0', '1.5', '0x10', '-1', '1e3', 'soon']) expect(() => parseDuration(bad)).toThrow(/expected a duration/);
  });

  it('shows sizes and lists as a user types them', () => {
    fc.assert(fc.property(fc.nat({ max: 2 ** 30 }), (n) => {
      expect(parseWholeNumber(formatSize(n), { size: true })).toBe(n);
    }));
    expect(formatSize(128 * 2 ** 20)).toBe('128M');
    expect(showDefault([32, 64, 128])).toBe('32,64,128');
    expect(showDefault(134217728, { size: true })).toBe('128M');
  });
});

describe('through the CLI', () => {
  it('refuses hex and exponents in every numeric option, with the option named', async () => {
    const port = await runCli(['echo', 'server', '--port', '0x50']);
    expect(port.stderr).toBe("iolab: option '--port <port>' argument '0x50' is invalid. expected a whole number from 0 to 65535, got '0x50'");
    expect(port.exitCode).not.toBe(0);
    const sizes = await runCli(['readv', 'readv.c', '--sizes', '0x10,1e1']);
    expect(sizes.stderr).toMatch(/^iolab: option '--sizes <list>' argument '0x10,1e1' is invalid\. expected a size .*, got '0x10'\n?$/);
    const offset = await runCli(['readv', 'readv.c', '--offset', '1e1']);
    expect(offset.stderr).toMatch(/^iolab: option '--offset <bytes>' argument '1e1' is invalid\. expected a size/);
  });

  it('reads sizes the same way in --size and --sizes', async () => {
    const r = await runCli(['readv', 'readv.c', '--sizes', '1k,2k', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(String(r.stdout)).buffers.map((b: { size: number }) => b.size)).toEqual([1024, 2048]);
  });

  it('prints its version, and help shows defaults as a user types them', async () => {
    const v = await runCli(['--version']);
    expect(v.stdout).toMatch(/^\d+\.\d+\.\d+$/);
    expect(v.exitCode).toBe(0);
    const readv = await runCli(['readv', '--help']);
    expect(readv.stdout).toMatch(/\(default:\s+32,64,128\)/);
    const gen = await runCli(['gen', '--help']);
    expect(gen.stdout).toContain('(default: 128M)');
  });
});

describe('a reader that closes stdout early', () => {
  it('ends the command quietly, as SIGPIPE would, with no stack trace', async () => {
    const { execa } = await import('execa');
    const [file, argv] = iolabArgv(['bench', 'iops', '--help']);
    const quoted = [file, ...argv].map((a) => `'${a}'`).join(' ');
    const r = await execa('bash', ['-c', `${quoted} | true; echo "status=\${PIPESTATUS[0]}" >&2`], { reject: false });
    expect(r.stderr).toBe('status=0');
  });
});
