// docs/api.md's JavaScript examples run as written: the first call, the prefill-then-decode
// causal state, loadFavor({ worker: true }) and codebook attention. Blocks that use names
// the reference defines elsewhere (q, k, v, d, favor) get them from a preamble; what they log,
// or what the test logs after them, is checked. The last test fails when a new js block is not
// run here.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { jsBlocks, runBlock } from './markdown-blocks.mjs';

const blocks = await jsBlocks('docs/api.md');
const ran = new Set();
// Not JavaScript to run: a bundler's configuration file (tests/browser/app/vite.config.js is that file).
const NOT_RUN = [(b) => b.startsWith('// vite.config.js')];

function block(what, find) {
  const found = blocks.find(find);
  assert.ok(found, `docs/api.md has the ${what} example`);
  ran.add(found);
  return found;
}

const importFavor = "import { loadFavor } from 'favor-attention';\n";
const inputs = (n, d) => `const d = ${d};\n`
  + `const t = (f) => ({ data: Float32Array.from({ length: ${n} * d }, (_, i) => 0.5 * Math.sin(f * i)), dims: [${n}, d] });\n`
  + 'const q = t(1.1), k = t(2.3), v = t(3.7);\n';

test('docs/api.md first call runs (exact attention, FAVOR+, matrices, compare)', async () => {
  const code = block('first-call', (b) => b.includes(importFavor.trim()) && b.includes('favorAttention(') && b.includes('compare('));
  const logs = await runBlock(code, 'api-first-call');
  assert.equal(logs.length, 3);
  const [[info], [error], [measures]] = logs;
  assert.equal(typeof info.version, 'string');
  assert.ok(error > 0 && error < 0.5, `FAVOR+ relative error ${error}`);
  assert.deepEqual(Object.keys(measures).sort(), ['maxAbs', 'meanRowKL', 'mse', 'relFrobenius']);
});

test('docs/api.md prefill-then-decode example runs and keeps constant state memory', async () => {
  const code = block('causal-state', (b) => b.includes('createCausalState'));
  const logs = await runBlock(`${importFavor}const favor = await loadFavor();\n${code}`, 'api-decode');
  const [length, bytes] = logs.at(-1);
  assert.equal(length, 120);
  assert.ok(bytes > 0 && bytes < 4 << 20, `state bytes ${bytes}`);
});

test('docs/api.md worker example runs (loadFavor({ worker: true }))', async () => {
  const code = block('worker', (b) => b.includes('loadFavor({ worker: true })'));
  const logs = await runBlock(`${importFavor}${inputs(32, 64)}${code}\n`
    + 'console.log(out.dims, fm.disposed, await favor.memory().catch((e) => e.message));', 'api-worker');
  const [dims, disposed, afterDispose] = logs.at(-1);
  assert.deepEqual(dims, [32, 64]);
  assert.equal(disposed, true);
  assert.match(afterDispose, /^memory: this favor instance has been disposed/);
});

test('docs/api.md codebook example runs: Gaussian responsibilities equal FAVOR+', async () => {
  const code = block('codebook', (b) => b.includes('favor.kmeans(') && b.includes('codebookFromFeatureMap'));
  const logs = await runBlock(`${importFavor}const favor = await loadFavor();\n${inputs(128, 16)}${code}\n`
    + "const viaCodebook = favor.codebookAttention(q, k, v, { codebook: favor.codebookFromFeatureMap(fm), assignment: 'gaussian' });\n"
    + 'console.log(out.dims, A.dims, favor.outputRelativeError(favor.favorAttention(q, k, v, { featureMap: fm }), viaCodebook));',
  'api-codebook');
  const [outDims, matrixDims, difference] = logs.at(-1);
  assert.deepEqual(outDims, [128, 16]);
  assert.deepEqual(matrixDims, [128, 128]);
  assert.ok(difference < 1e-4, `codebook (Gaussian) vs FAVOR+: ${difference}`);
});

test('every js block of docs/api.md is run above (but the bundler configuration)', () => {
  const left = blocks.filter((b) => !ran.has(b) && !NOT_RUN.some((skip) => skip(b)));
  assert.deepEqual(left.map((b) => b.split('\n')[0]), []);
});
