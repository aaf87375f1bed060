// The installed package as a user reads it: the LICENSE (MIT, as package.json says), package.json's
// repository, homepage and bugs (the project's GitHub coordinates), and every link of README and
// the shipped docs: a relative one names a file of the installed package (and a heading of it,
// after '#'); one into the repository names a file the checkout tracks. Links to other sites are
// not fetched.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const repository = 'https://github.com/iolab/iolab';

/** The link targets of a markdown text, code blocks and code spans left out. */
function linkTargets(markdown) {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

/** GitHub's anchors of a markdown file's headings. */
function anchors(markdown) {
  const seen = new Map();
  const out = new Set();
  for (const [, title] of markdown.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = title.toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replaceAll(' ', '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** What is wrong with one link of file (a path in the installed package pkg); undefined when
 * nothing is. tracked: the checkout's files. */
function brokenLink(pkg, file, target, tracked) {
  if (target.startsWith(`${repository}/`)) {
    const path = /^\/(?:raw|blob|tree)\/main\/(.+)$/.exec(target.slice(repository.length))?.[1];
    if (path === undefined) return target === `${repository}/issues` ? undefined : 'not a file of the repository';
    return tracked.has(path) ? undefined : `${path} is not in the repository`;
  }
  if (/^[a-z]+:/.test(target)) return undefined; // another site
  const [path, anchor] = target.split('#');
  const resolved = path === '' ? join(pkg, file) : join(pkg, dirname(file), path);
  if (!existsSync(resolved)) return `${relative(pkg, resolved)} is not in the installed package`;
  if (anchor !== undefined && !anchors(readFileSync(resolved, 'utf8')).has(anchor)) return `no heading #${anchor} in ${relative(pkg, resolved)}`;
  return undefined;
}

export async function checks({ root, project, installFlags, run, check }) {
  if (installFlags.includes('--ignore-scripts')) return; // the same files: read once per line
  const pkg = join(project, 'node_modules', 'iolab');
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  const license = existsSync(join(pkg, 'LICENSE')) ? readFileSync(join(pkg, 'LICENSE'), 'utf8') : '';
  check('LICENSE: the MIT license of the iolab authors, as package.json says',
    manifest.license === 'MIT' && license.startsWith('MIT License\n') && /^Copyright \(c\) \d{4} the iolab authors$/m.test(license),
    `license ${manifest.license}; LICENSE: ${license.split('\n').slice(0, 3).join(' / ') || 'missing'}`);
  const fields = { repository: manifest.repository, homepage: manifest.homepage, bugs: manifest.bugs };
  check(`package.json: repository, homepage and bugs at ${repository}`,
    fields.repository?.type === 'git' && fields.repository?.url === `git+${repository}.git` &&
    fields.homepage === `${repository}#readme` && fields.bugs?.url === `${repository}/issues`, JSON.stringify(fields));

  const tracked = new Set(run('git', ['ls-files'], { cwd: root }).stdout.split('\n'));
  const docs = existsSync(join(pkg, 'docs')) ? readdirSync(join(pkg, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`) : [];
  for (const [what, files] of [['README', ['README.md']], [`the ${docs.length} docs`, docs]]) {
    const links = files.flatMap((file) => linkTargets(readFileSync(join(pkg, file), 'utf8')).map((target) => ({ file, target })));
    const broken = links.map((l) => ({ ...l, why: brokenLink(pkg, l.file, l.target, tracked) })).filter((l) => l.why !== undefined);
    check(`${what}: all ${links.length} links resolve in the installed package`, links.length > 0 && broken.length === 0,
      broken.map((l) => `${l.file}: ${l.target}: ${l.why}`).join('\n'));
  }
  const linked = new Set(linkTargets(readFileSync(join(pkg, 'README.md'), 'utf8')).filter((t) => t.startsWith('docs/')).map((t) => t.split('#')[0]));
  check(`README's links into docs/ (${linked.size} files) are all shipped`, linked.size > 0 && [...linked].every((f) => docs.includes(f)));
}
