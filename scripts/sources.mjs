// Lists the addon's sources for binding.gyp (paths relative to the project root), so that a
// feature file dropped into native/, native/bench/, native/echo/ or native/ipc/ is built without editing gyp.
import { readdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const folders = [['native', /\.cc$/], ['native/bench', /\.c$/], ['native/echo', /\.c$/], ['native/ipc', /\.c$/]];
const sources = [];
for (const [folder, pattern] of folders) {
  const dir = join(root, folder);
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir).sort()) if (pattern.test(name)) sources.push(`${folder}/${name}`);
}
console.log(sources.join('\n'));
