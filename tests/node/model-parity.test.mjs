// The project's trained models (train/models) run on the public API by model/runner.js:
//  - the training script's own FAVOR+ (torch) equals favorAttention on the same W (fixture);
//  - the runner's logits equal torch's on a held-out text (train/fixtures/parity-*.json): the
//    softmax model with exact attention, the Performer (and the fine-tuned model) with their
//    exported W under FAVOR+. torch's FAVOR+ reference there is train/model.py's log-space form
//    (a log-sum-exp over features, in float64): its quadratic training form shifts all of a head's
//    keys by one max and clamps row sums at 1e-30, which loses the first rows of the fine-tuned
//    model (off by up to ~4.6 in logits), where favor-attention's running shifts keep them;
//  - generation through causal states (prefill, then one position per append) draws each character
//    from the logits a whole-text forward gives, for exact, FAVOR+ and OPRF; the same seed gives
//    the same text.
// Tolerances: the runner and torch compute the same float32 network in a different order (GEMM
// blocking, LayerNorm and GELU in double vs float): 1e-4 relative (the bound required) to the
// largest logit leaves a wide margin while a wrong layer, head split or W moves them by >= 1e-2.
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

test('the manifest records every model, its checksum, size and the held-out split', async () => {
  assert.ok(manifest.models.length >= 2);
  const { createHash } = await import('node:crypto');
  for (const m of manifest.models) {
    const bytes = await readFile(new URL(`../../train/models/${m.file}`, import.meta.url));
    assert.equal(createHash('sha256').update(bytes).digest('hex'), m.sha256, m.name);
    assert.equal(bytes.length, m.bytes, m.name);
    assert.ok(bytes.length <= 2.5e6, `${m.name}: ${bytes.length} bytes`);
  }
  assert.ok(held.length > 100000, `held-out text: ${held.length} characters`);
});

for (const name of ['softmax', 'performer', 'finetune']) {
  test(`${name}: runner logits equal torch's on the held-out fixture text`, async (t) => {
    if (!manifest.models.some((m) => m.name === name)) return t.skip(`no ${name} model in the manifest`);
    const fx = JSON.parse(await readFile(new URL(`parity-${name}.json`, fixtures), 'utf8'));
    const model = await loadModel(favor, name);
    const maps = model.exportedFeatureMaps();
    const spec = fx.attention === 'softmax' ? { method: 'exact' } : { method: 'favor', featureMaps: maps };
    const { logits } = model.forward(fx.text, spec);
    assert.deepEqual(logits.dims, fx.dims);
    const err = maxRelDiff(logits.data, f32(fx.logits));
    t.diagnostic(`${name} (${fx.attention}): max |Δlogit| / max |logit| = ${err.toExponential(2)} over ${fx.dims.join('×')}`);
    assertBelow(err, 1e-4, `${name} logits`);
    maps.forEach((m) => m.dispose());
  });
}

test('generation through causal states draws from the whole-text logits; the same seed, the same text', async (t) => {
  const model = await loadModel(favor, 'performer');
  const trained = model.exportedFeatureMaps();
  const oprf = Array.from({ length: model.layers }, (_, l) => favor.createFeatureMap({ dim: 32, features: 64, kernel: 'oprf', seed: l }));
  const prefix = held.slice(1000, 1100), n = 12, V = model.chars.length;
  for (const [label, spec, tol] of [['exact', { method: 'exact' }, 1e-4], ['FAVOR+ with the exported W', { method: 'favor', featureMaps: trained }, 1e-4]]) {
    const g = model.generate(prefix, n, spec, { seed: 3, logits: true });
    assert.equal(g.text.length, n);
    assert.equal(model.generate(prefix, n, spec, { seed: 3 }).text, g.text, `${label}: same seed, same text`);
    assert.ok(g.charsPerSecond > 0);
    // character t was drawn from the logits of the whole text prefix + generated[0..t) at its last row
    const { logits } = model.forward(prefix + g.text.slice(0, n - 1), spec);
    let worst = 0;
    for (let s = 0; s < n; s++) {
      const row = logits.data.subarray((prefix.length - 1 + s) * V, (prefix.length + s) * V);
      worst = Math.max(worst, maxRelDiff(g.logits[s], row));
    }
    t.diagnostic(`${label}: state path vs whole-text forward, max rel. logit difference ${worst.toExponential(2)}`);
    assertBelow(worst, tol, label);
  }
  // OPRF (rho from each call's inputs) runs in a state with rho fixed from the prefill
  const g = model.generate(prefix, n, { method: 'favor', featureMaps: oprf }, { seed: 3 });
  assert.equal(g.text.length, n);
  // so do FAVOR#'s maps, fitted to the prefill
  for (const kernel of ['sderf', 'aderf']) {
    const maps = Array.from({ length: model.layers }, (_, l) => favor.createFeatureMap({ dim: 32, features: 64, kernel, seed: l }));
    assert.equal(model.generate(prefix, n, { method: 'favor', featureMaps: maps }, { seed: 3 }).text.length, n, kernel);
    assert.ok(maps.every((m) => m.dataDependent && !m.disposed), `${kernel}: the caller's maps are left as they were`);
    maps.forEach((m) => m.dispose());
  }
  // codebook states (k-means on the prefill's keys)
  assert.equal(model.generate(prefix, n, { method: 'codebook', clusters: 16 }, { seed: 3 }).text.length, n);
  // the context ends at 256 positions: the prefix is cut, generation stops there
  assert.equal(model.generate(held.slice(0, 400), 300, { method: 'exact' }, { seed: 1 }).text.length, model.context - 1);
  [...trained, ...oprf].forEach((m) => m.dispose());
});

test('a text longer than the context runs in windows (stride context / 2)', async () => {
  const model = await loadModel(favor, 'softmax');
  const text = held.slice(0, 600), V = model.chars.length;
  const full = model.forward(text).logits;
  assert.deepEqual(full.dims, [600, V]);
  const first = model.forward(text.slice(0, 256)).logits, last = model.forward(text.slice(344)).logits;
  assert.deepEqual(full.data.subarray(0, 256 * V), first.data);
  assert.deepEqual(full.data.subarray(512 * V), last.data.subarray((512 - 344) * V));
  assert.throws(() => model.forward(text, { method: 'exact' }, { capture: true }), RangeError);
});
