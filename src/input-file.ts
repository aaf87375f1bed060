// Reading a file a user named as a command's input (a job file, a benchmark JSON): opened
// without blocking and checked on the open fd, so a FIFO cannot make the command wait for a
// writer forever and a device cannot be read forever; anything but a regular file is one line.
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { errnoText, UserError } from './user-error.js';
import { showText } from './show-bytes.js';
import { otherKind } from './write-target.js';

/** The bytes of the regular file at path; `what` names what the command wants ("a fio job
 * file") in the refusal of anything else. */
export function readInputFile(path: string, what: string): Buffer {
  const shown = showText(path);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // open(2) of a Unix socket's path fails with ENXIO
    throw new UserError(`${shown}: ${code === 'ENOENT' ? 'no such file' : code === 'ENXIO' ? 'not a regular file (a Unix socket)' : errnoText(err)}`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new UserError(`${shown}: is a folder; name ${what}`);
    if (!st.isFile()) throw new UserError(`${shown}: ${otherKind(st)}, not a regular file; name ${what}`);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
