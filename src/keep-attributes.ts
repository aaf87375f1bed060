// What a file replaced with --force keeps: its owner, group, mode and extended attributes (an
// ACL is one), as `sed -i` and `cp --preserve=all` keep them. The new contents are written to
// a temp file that belongs to whoever runs iolab; before it is renamed over the old file, it
// gets the old one's attributes, so a root run does not leave a user's file root's and
// unreadable to them. One module for every replacing command (writev, gen, every --output,
// report -o).
import { fchmodSync, fchownSync, fstatSync, lstatSync } from 'node:fs';
import { native } from './native.js';
import { showText } from './show-bytes.js';

/**
 * Gives the open temp file `fd` the attributes of the regular file at `path` that it is about
 * to replace (nothing for a symlink or a missing file: a link replaced is not its target). What
 * this process may not keep (another owner, unless it is root; a trusted.* attribute) is said
 * in one `note:` line on stderr; the rest is kept.
 */
export function keepAttributes(path: string, fd: number): void {
  const old = lstatSync(path, { throwIfNoEntry: false });
  if (!old?.isFile()) return;
  const now = fstatSync(fd);
  const lost: string[] = [];
  // the owner first: a chown clears the set-user-ID and set-group-ID bits the mode sets again
  if (now.uid !== old.uid || now.gid !== old.gid) {
    try {
      fchownSync(fd, old.uid, old.gid);
    } catch {
      try {
        fchownSync(fd, -1, old.gid);  // the group alone (one of ours) may still be kept
      } catch { /* neither */ }
      const after = fstatSync(fd);
      if (after.uid !== old.uid) lost.push(`its owner (uid ${old.uid})`);
      if (after.gid !== old.gid) lost.push(`its group (gid ${old.gid})`);
    }
  }
  const notCopied = native.copyXattrs(path, fd);
  if (notCopied.length > 0) lost.push(`its extended attribute${notCopied.length > 1 ? 's' : ''} ${notCopied.map(showText).join(', ')}`);
  // always: the umask took bits from the mode the file was created with, and an ACL copied
  // above set its group bits
  fchmodSync(fd, old.mode & 0o7777);
  if (lost.length > 0) process.stderr.write(`note: '${showText(path)}' replaced without ${lost.join(' and ')}: not this user's to set\n`);
}
