// The ONE place that loads the addon. Everything native is typed here; callers import
// `native` (and the helpers below) and never require the .node file themselves.
// IOLAB_ASAN=1 loads the sanitized build (npm run build:asan) instead of the normal one.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What the addon owns and has not released (see native/live_objects.h). */
export interface LiveObjects {
  rings: number;
  ringOps: number;
  heldBuffers: number;
  mappings: number;
  ownedFds: number;
  nativeJobs: number;
  nativeServers: number;
}

/** Error thrown for a failed syscall: the shape of Node's fs errors. */
export interface ErrnoException extends Error {
  code: string;
  errno: number;
  syscall: string;
  path?: string;
}

export interface NativeAddon {
  /** Counters of live native objects; all zero when nothing is held. */
  liveObjects(): LiveObjects;
  /** errno's symbolic name ("ENOENT") for a positive errno value. */
  errnoName(errno: number): string;
  /** True in the sanitized build. */
  sanitized: boolean;
  /** Sanitized build only: writes one byte past a heap block (the process must die). */
  asanSelfTest?: () => void;

  // ---- features add their functions below, one block each ----
}

function addonPath(): string {
  const sanitized = process.env.IOLAB_ASAN === '1';
  const path = join(projectRoot, sanitized ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
  if (!existsSync(path)) {
    const how = sanitized ? 'npm run build:asan' : 'npm run build (or npm ci)';
    throw Object.assign(new Error(`the iolab addon is not built (${path} is missing); run: ${how}`), {
      code: 'ERR_IOLAB_NOT_BUILT',
    });
  }
  return path;
}

const require = createRequire(import.meta.url);
export const native: NativeAddon = require(addonPath());

/** True when err is a syscall error thrown by the addon (or by Node's fs) with a code. */
export function isErrnoException(err: unknown): err is ErrnoException {
  return err instanceof Error && typeof (err as ErrnoException).code === 'string' &&
    typeof (err as ErrnoException).errno === 'number';
}
