// Every relative link of the README, BENCHMARKS.md and docs/*.md points at a file or folder of
// the repository: [text](target) and ![alt](target), a #fragment and a "title" aside;
// http(s) and mailto links, and in-page #anchors, are not checked. Links inside code blocks
// and code spans are not links.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = new URL('../../', import.meta.url);

const files = ['README.md', 'BENCHMARKS.md', ...readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The link targets of a markdown text, code blocks and code spans left out. */
function linkTargets(markdown) {
  const prose = markdown.replace(/^([ \t]*)(```|~~~)[\s\S]*?^\1\2/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
}

test('linkTargets finds links and images, not code', () => {
  const text = 'See [a](docs/a.md#x) and ![b](b.png "B").\n`[c](c.md)`\n```md\n[d](d.md)\n```\n[e](https://e.org)';
  assert.deepEqual(linkTargets(text), ['docs/a.md#x', 'b.png', 'https://e.org']);
});

for (const file of files) {
  test(`${file}: every relative link resolves to a file of the repository`, () => {
    const base = new URL(file, root);
    const missing = [];
    for (const target of linkTargets(readFileSync(base, 'utf8'))) {
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      const url = new URL(target.split('#')[0], base);
      const path = fileURLToPath(url);
      assert.ok(path.startsWith(fileURLToPath(root)), `${file}: ${target} points outside the repository`);
      const inRepo = path.slice(fileURLToPath(root).length);
      if (!existsSync(url)) missing.push(`${target} (${inRepo})`);
    }
    assert.deepEqual(missing, [], `${file} links to files that do not exist`);
  });
}

// Every repository path that prose or a comment names (`src/favor/kernels/gemm.hpp`,
// docs/design.md §4, …) exists: a reader can open what the text points at. A stem names the
// files it begins (tests/node/misuse: misuse.test.mjs). Build outputs (dist/, build/,
// node_modules/) and paths with wildcards or placeholders are not checked.
const TOP = '(?:include|src|bindings|web|tests|bench|scripts|docs|model|train|demo|cmake|\\.ci)';
const PATH = new RegExp(`(?<![\\w./-])${TOP}/[\\w./-]*[\\w]`, 'g');
const SOURCES = ['README.md', 'BENCHMARKS.md', 'CMakeLists.txt', 'package.json'];
for (const dir of ['docs', 'include', 'src', 'bindings', 'web', 'tests', 'bench', 'scripts', 'model', 'train', 'demo/src']) {
  for (const f of readdirSync(new URL(`${dir}/`, root), { recursive: true })) {
    if (/(^|\/)(node_modules|dist|\.cache)(\/|$)/.test(f) || !/\.(md|hpp|cpp|js|mjs|ts|py|sh|txt|cmake)$/.test(f)) continue;
    SOURCES.push(`${dir}/${f}`);
  }
}

function isStem(path) {
  const slash = path.lastIndexOf('/');
  const dir = new URL(path.slice(0, slash + 1), root), stem = path.slice(slash + 1);
  return existsSync(dir) && readdirSync(dir).some((f) => f.startsWith(`${stem}.`) || f.startsWith(`${stem}-`) || f.startsWith(`${stem}_`));
}

test('every repository path named in docs, comments and scripts exists', () => {
  const missing = [];
  for (const file of SOURCES) {
    const text = readFileSync(new URL(file, root), 'utf8');
    for (const [path] of text.matchAll(PATH)) {
      if (/[*{}$<>]|\.\.\.|(^|\/)dist(\/|$)/.test(path) || file === 'tests/node/docs-links.test.mjs') continue;
      if (!existsSync(new URL(path, root)) && !isStem(path)) missing.push(`${file}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});

// The repository is read on its own: no text cites a document it does not hold, an entry of an
// issue tracker outside it, or a scratch path.
test('no text points outside the repository', () => {
  const outside = /\bDESIGN\.md|\b[Ii]ssues? #?\d+|\.\.\/shared\/|\/tmp\//;
  const hits = SOURCES.filter((f) => f !== 'tests/node/docs-links.test.mjs')
    .flatMap((file) => readFileSync(new URL(file, root), 'utf8').split('\n')
      .flatMap((line, i) => (outside.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])));
  assert.deepEqual(hits, []);
});

// docs/layout.md is a newcomer's map: it names every source file of the library, the bindings,
// the package, the page, the model runner, the scripts and the fuzz target (by its name or its
// stem: `gemm` for gemm.hpp and gemm.cpp), and every benchmark script, so that a file added
// without a place in it fails here.
test('docs/layout.md names every source file and every benchmark script', () => {
  const layout = readFileSync(new URL('docs/layout.md', root), 'utf8');
  const named = (f) => {
    const name = f.split('/').pop();
    return [name, name.replace(/\.\w+$/, ''), f].some((n) => layout.includes(`\`${n}\``));
  };
  const files = ['src', 'include', 'bindings', 'web', 'demo/src', 'model', 'scripts', 'tests/fuzz']
    .flatMap((dir) => readdirSync(new URL(`${dir}/`, root), { recursive: true }).map((f) => `${dir}/${f}`))
    .filter((f) => /\.(hpp|cpp|js|mjs|ts|sh|py|css)$/.test(f) && !/(^|\/)(node_modules|dist)\//.test(f))
    .concat(readdirSync(new URL('bench/', root)).filter((f) => /\.(mjs|sh)$/.test(f)).map((f) => `bench/${f}`));
  assert.ok(files.length > 150, `${files.length} files`);
  assert.deepEqual(files.filter((f) => !named(f)), []);
});
