// docs/models.md's model-runner example runs: the block as written, but for its import of
// './model/node.js' (relative to the repository root), which points at the same file from the
// module beside this test. What it computes is logged after it and checked.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { jsBlocks, ROOT, runBlock } from './markdown-blocks.mjs';

const blocks = await jsBlocks('docs/models.md');

test('docs/models.md has one JavaScript example (a new one needs its own check here)', () => {
  assert.equal(blocks.length, 1);
});

test('docs/models.md model-runner example runs: forward, bits per character, top, generate', async () => {
  const [block] = blocks;
  const relative = "from './model/node.js'";
  assert.ok(block.includes(relative), 'the example imports the runner from ./model/node.js');
  const code = block.replace(relative, `from '${new URL('model/node.js', ROOT).href}'`)
    + '\nconst bits = model.bitsPerChar(text, { method: \'exact\' });'
    + '\nconst generated = model.generate(text.slice(0, 100), 60, { method: \'favor\', featureMaps: trained }, { seed: 1 });'
    + '\nconsole.log(logits.dims, qk.length, bits, model.top(logits, 100, 5), generated.text.length);'
    + '\nfor (const fm of trained) fm.dispose();\nmodel.dispose();';
  const logs = await runBlock(code, 'models');
  const [logitsDims, layers, bits, top, generatedLength] = logs.at(-1);
  assert.equal(logitsDims[0], 256);
  assert.equal(layers, 4);
  assert.ok(bits.bitsPerChar > 1 && bits.bitsPerChar < 4, `bits per character ${bits.bitsPerChar}`);
  assert.equal(bits.characters, 255);
  assert.equal(top.length, 5);
  assert.ok(top.every(({ char, p }) => typeof char === 'string' && p > 0 && p <= 1));
  assert.equal(generatedLength, 60);
});
