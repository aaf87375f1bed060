// Lists the addon's sources for binding.gyp (paths relative to the project root), so that a
// feature file dropped into native/ or any folder below it is built without editing gyp: C++
// (.cc: Node-aware features and bindings, e.g. native/ring, native/sys) and plain C (.c: the
// cores native/bench, native/echo, native/ipc, ...). --test-engines=0 leaves out
// native/bench/engine_test_*.c, the engines only the tests use (the prebuilt addon has none; the
// package ships no such file either, so a build from source there has none).
import { readdirSync, existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const native = join(root, 'native');
const folders = [['native', /\.cc$/]];
for (const name of readdirSync(native).sort()) {
  if (statSync(join(native, name)).isDirectory()) folders.push([`native/${name}`, /\.cc?$/]);
}
const testEngines = !process.argv.includes('--test-engines=0');
const sources = [];
for (const [folder, pattern] of folders) {
  const dir = join(root, folder);
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir).sort()) {
    if (!pattern.test(name)) continue;
    if (!testEngines && folder === 'native/bench' && name.startsWith('engine_test_')) continue;
    sources.push(`${folder}/${name}`);
  }
}
console.log(sources.join('\n'));
