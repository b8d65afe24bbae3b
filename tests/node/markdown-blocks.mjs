// The js code blocks of a markdown file, and a runner that executes one as a module beside this
// file (so that 'favor-attention' resolves to the package), capturing what it logs. Shared by the
// tests that run the README's and docs/'s examples as written. Not a test file (node --test runs
// only *.test.mjs here).
import { readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = new URL('../../', import.meta.url);

/** The contents of every ```js block of `path` (relative to the repository root), in order. */
export async function jsBlocks(path) {
  const text = await readFile(new URL(path, ROOT), 'utf8');
  // A block may be indented (inside a list item): its fence's indentation is taken off each line.
  return [...text.matchAll(/^([ \t]*)```js\n([\s\S]*?)^\1```/gm)]
    .map(([, indent, code]) => code.split('\n').map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line)).join('\n'));
}

/** Runs `code` as a module and resolves to the argument lists of its console.log calls. */
export async function runBlock(code, name) {
  const file = fileURLToPath(new URL(`./.doc-example-${name}.mjs`, import.meta.url));
  const logs = [];
  const log = console.log;
  console.log = (...args) => logs.push(args);
  try {
    await writeFile(file, code);
    await import(pathToFileURL(file).href);
  } finally {
    console.log = log;
    await rm(file, { force: true });
  }
  return logs;
}
