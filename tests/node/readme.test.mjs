// The README's JavaScript examples run as written: the quick start and the prefill-then-decode
// example (each block is written to a module beside this file, so that 'favor-attention'
// resolves, and imported; the decode block asserts its own printed length through the state).
import assert from 'node:assert/strict';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = new URL('../../', import.meta.url);
const readme = await readFile(new URL('README.md', root), 'utf8');
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);

async function runBlock(code, name) {
  const file = fileURLToPath(new URL(`./.readme-${name}.mjs`, import.meta.url));
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

test('README quick start runs', async () => {
  const block = blocks.find((b) => b.includes("import { loadFavor } from 'favor-attention'") && b.includes('favorAttention('));
  assert.ok(block, 'the quick-start block is in the README');
  const logs = await runBlock(block, 'quick-start');
  assert.ok(logs.length >= 3);
});

test('README prefill-then-decode example runs and keeps constant state memory', async () => {
  const block = blocks.find((b) => b.includes('createCausalState'));
  assert.ok(block, 'the causal-state block is in the README');
  const code = `import { loadFavor } from 'favor-attention';\nconst favor = await loadFavor();\n${block}`;
  const logs = await runBlock(code, 'decode');
  const [length, bytes] = logs.at(-1);
  assert.equal(length, 120);
  assert.ok(bytes > 0 && bytes < 4 << 20, `state bytes ${bytes}`);
});

test('README worker example runs (loadFavor({ worker: true }))', async () => {
  const block = blocks.find((b) => b.includes('loadFavor({ worker: true })'));
  assert.ok(block, 'the worker block is in the README');
  const inputs = "import { loadFavor } from 'favor-attention';\n"
    + 'const t = () => ({ data: Float32Array.from({ length: 32 * 64 }, (_, i) => Math.sin(i)), dims: [32, 64] });\n'
    + 'const q = t(), k = t(), v = t();\n';
  const logs = await runBlock(`${inputs}${block}\nconsole.log(out.dims, fm.disposed, await favor.memory().catch((e) => e.message));`, 'worker');
  const [dims, disposed, afterDispose] = logs.at(-1);
  assert.deepEqual(dims, [32, 64]);
  assert.equal(disposed, true);
  assert.match(afterDispose, /^memory: this favor instance has been disposed/);
});
