// The error meant for the user: printed as one `iolab:` line (src/program.ts), no stack, and an
// errno error's words without the paths Node adds. A module of its own so that the lowest
// shared modules (src/write-target.ts) can use them; src/cli-util.ts re-exports UserError.
import { getSystemErrorMap } from 'node:util';

/** An error meant for the user: printed as one line, exit code 1 (or the given one). */
export class UserError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'UserError';
  }
}

/** "EACCES: permission denied": an errno error's code and text, without the paths Node adds. */
export function errnoText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const text = e.errno !== undefined ? getSystemErrorMap().get(e.errno)?.[1] : undefined;
  if (e.code && text) return `${e.code}: ${text}`;
  // (Node 24's recursive rm gives no code, only ", Unknown error: Device or resource busy 'path'")
  const node24 = err instanceof Error ? /^, Unknown error: (.*?)(?: '[^']*')?$/.exec(err.message) : null;
  if (node24) return node24[1];
  return err instanceof Error ? err.message : String(err);
}
