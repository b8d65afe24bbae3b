// Held-out bits per character recomputed by the JS runner (model/runner.js on favor-attention), not
// copied: the manifest's evalSubsetBpc (torch, on the weights as stored in float16) over its
// evalSubset windows of the held-out text (chapters 122-135 and the epilogue), within 0.02 (the
// bound required): the softmax model with exact attention, the Performer with FAVOR+ on its exported
// W (and the fine-tuned model, when present, the same way).
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { heldOutText, loadModel, readManifest } from '../../model/node.js';

let favor, manifest, held;
before(async () => {
  favor = await loadFavor({ threads: 1 });
  manifest = await readManifest();
  held = await heldOutText();
});

for (const [name, method] of [['softmax', 'exact'], ['performer', 'favor'], ['finetune', 'favor']]) {
  test(`${name} with ${method} attention: held-out bits per character within 0.02 of the manifest`, async (t) => {
    const record = manifest.models.find((m) => m.name === name);
    if (!record) {
      if (name === 'finetune') return t.skip('no finetune model in the manifest');
      assert.fail(`no ${name} model in train/models/manifest.json`);
    }
    const model = await loadModel(favor, name);
    const { windows, window, stride, start } = record.evalSubset;
    assert.equal(window, model.context + 1);
    assert.equal(stride, model.context);
    const text = held.slice(start, start + (windows - 1) * stride + window);
    const maps = method === 'favor' ? model.exportedFeatureMaps() : [];
    assert.equal(maps.length, method === 'favor' ? model.layers : 0);
    const t0 = performance.now();
    const { bitsPerChar, characters } = model.bitsPerChar(text, method === 'favor' ? { method, featureMaps: maps } : { method });
    t.diagnostic(`${name}: runner ${bitsPerChar.toFixed(4)} vs manifest ${record.evalSubsetBpc} bits/char over ${characters} characters ` +
      `(${windows} windows), ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    assert.equal(characters, windows * (window - 1));
    assert.ok(Math.abs(bitsPerChar - record.evalSubsetBpc) <= 0.02, `${bitsPerChar} vs ${record.evalSubsetBpc}`);
    maps.forEach((m) => m.dispose());
  });
}
