// The README's JavaScript example runs as written: exact attention, FAVOR+ and a causal state
// (the block is written to a module beside this file, so that 'favor-attention' resolves, and
// imported; what it logs is checked). The API reference's examples: api-doc.test.mjs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { jsBlocks, runBlock } from './markdown-blocks.mjs';

const blocks = await jsBlocks('README.md');

test('README has one JavaScript example (a new one needs its own check here)', () => {
  assert.equal(blocks.length, 1);
});

test('README example runs: FAVOR+ close to exact attention, a causal state of fixed size', async () => {
  const [block] = blocks;
  assert.ok(block.includes("import { loadFavor } from 'favor-attention'") && block.includes('favorAttention(')
    && block.includes('createCausalState('), 'the example loads the package, runs FAVOR+ and a causal state');
  const logs = await runBlock(block, 'readme');
  assert.equal(logs.length, 2);
  const [[error], [dims, length, bytes]] = logs;
  assert.ok(error > 0 && error < 0.5, `FAVOR+ relative error ${error}`);
  assert.deepEqual(dims, [1, 64]);
  assert.equal(length, 513);
  assert.ok(bytes > 0 && bytes < 4 << 20, `state bytes ${bytes}`);
});
