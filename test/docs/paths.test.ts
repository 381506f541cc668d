/**
 * Docs that stay true: every repository path README.md, CONTRIBUTING.md and docs/ name exists, every
 * relative link between them resolves, and README's "Where things are" names every folder of the
 * tree. A file moved without its docs fails here, naming the page and the line.
 */
import { existsSync, globSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = ['README.md', 'CONTRIBUTING.md', ...globSync('docs/**/*.md', { cwd: ROOT })].sort();
/** The folders a backticked path is taken to be a repository path under. */
const TOP = ['src', 'test', 'docs', 'bench', 'deploy', 'systemd', 'scripts', 'bin', 'devices', '.ci'];
const PATH = new RegExp(`\`((?:${TOP.map((t) => t.replace('.', '\\.')).join('|')})/[^\`\\s]*)\``, 'g');

interface Named {
  page: string;
  line: number;
  path: string;
}

function lines(page: string): string[] {
  return readFileSync(join(ROOT, page), 'utf8').split('\n');
}

/** `src/{a,b}.ts` names `src/a.ts` and `src/b.ts`. */
function expand(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path);
  if (!m) return [path];
  return m[1].split(',').flatMap((alt) => expand(path.slice(0, m.index) + alt + path.slice(m.index + m[0].length)));
}

/** Whether a named path stands for something in the tree (a `<placeholder>` stands for any entry of its folder). */
function exists(path: string): boolean {
  const bare = path.replace(/[.,:;)]+$/, '').replace(/:\d+(-\d+)?$/, '');
  const placeholder = bare.indexOf('<');
  if (placeholder >= 0) return existsSync(join(ROOT, bare.slice(0, bare.lastIndexOf('/', placeholder) + 1)));
  if (bare.includes('*')) return globSync(bare, { cwd: ROOT }).length > 0;
  return existsSync(join(ROOT, bare));
}

function namedPaths(): Named[] {
  const named: Named[] = [];
  for (const page of PAGES)
    lines(page).forEach((text, i) => {
      for (const m of text.matchAll(PATH)) for (const path of expand(m[1])) named.push({ page, line: i + 1, path });
    });
  return named;
}

describe('the docs name only what exists', () => {
  it('reads the pages it checks, and finds paths in them', () => {
    expect(PAGES).toContain('docs/architecture.md');
    expect(namedPaths().length).toBeGreaterThan(100);
  });

  it('every repository path named in README.md, CONTRIBUTING.md and docs/ exists', () => {
    const missing = namedPaths()
      .filter((n) => !exists(n.path))
      .map((n) => `${n.page}:${n.line}: ${n.path}`);
    expect(missing).toEqual([]);
  });

  it('every relative link between the pages resolves', () => {
    const broken: string[] = [];
    for (const page of PAGES)
      lines(page).forEach((text, i) => {
        for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = m[1].split('#')[0];
          if (!target || /^[a-z]+:/.test(target)) continue;
          if (!existsSync(join(ROOT, dirname(page), target))) broken.push(`${page}:${i + 1}: ${m[1]}`);
        }
      });
    expect(broken).toEqual([]);
  });

  it('README\'s "Where things are" names every folder of the tree', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Where things are'), readme.indexOf('\n## ', readme.indexOf('## Where things are') + 1));
    const folders = [
      ...readdirSync(ROOT, { withFileTypes: true })
        .filter((d) => d.isDirectory() && !d.name.startsWith('.') && !['dist', 'node_modules', 'data'].includes(d.name))
        .map((d) => `${d.name}/`),
      ...readdirSync(join(ROOT, 'src'), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => `src/${d.name}/`),
    ];
    expect(folders).toContain('src/modules/');
    expect(folders.filter((f) => !section.includes(`\`${f}`) && !section.includes(`\`${f.slice(0, -1)}`))).toEqual([]);
  });
});
