// The long-context models (train/models: long-softmax, long-performer; rotary positions, trained
// at 1,024 characters) run on the public API by model/runner.js, past their training context:
//  - the runner's logits equal torch's on the first 1,024 held-out characters
//    (train/fixtures/parity-long-*.json, every 4th row and the last): the softmax model exact, the
//    Performer under FAVOR+ with its exported W and exact on its q and k. Rotations included: a
//    wrong angle or pairing moves logits by far more than the 1e-4 bound (see model-parity.test.mjs
//    for why that tolerance).
//  - bits per character of the first 2,048 held-out characters, each predicted from the whole
//    prefix (twice the training context), within 0.02 of the manifest's float64 torch figure, for
//    the Performer under FAVOR+ and the softmax model exact. The runner computes in float32; its
//    per-character bits agree with torch's to ~1e-4, so 0.02 only fails for a real difference
//    (a position offset, a window, a wrong W).
//  - generation through FAVOR+ states: 4,096 characters, one per append, and the states' bytes
//    never change after the prefill (the first append); the logits each character is drawn from equal a whole-text
//    forward's at the same positions (rotations at absolute positions past 1,024).
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
const rowsOf = (logits, rows, V) => {
  const out = new Float32Array(rows.length * V);
  rows.forEach((r, i) => out.set(logits.subarray(r * V, (r + 1) * V), i * V));
  return out;
};

let favor, manifest, held;
before(async () => {
  favor = await loadFavor({ threads: 1 });
  manifest = await readManifest();
  held = await heldOutText();
});

test('the long-context models are in the manifest with rotary positions, three seeds each', () => {
  for (const name of ['long-softmax', 'long-performer']) {
    const record = manifest.models.find((m) => m.name === name);
    assert.ok(record, name);
    assert.equal(record.architecture.rotary.base, 10000, `${name}: rotary base`);
    assert.ok(record.training.context >= 1024, `${name}: training context ${record.training.context}`);
    assert.ok(!record.tensors.some((t) => t.name === 'pos'), `${name}: no learned positions`);
    assert.equal(manifest.replicas[name].length, 2, `${name}: seeds 2 and 3`);
  }
});

for (const name of ['long-softmax', 'long-performer']) {
  test(`${name}: runner logits equal torch's past the rotations`, async (t) => {
    const fx = JSON.parse(await readFile(new URL(`parity-${name}.json`, fixtures), 'utf8'));
    const model = await loadModel(favor, name);
    const V = model.chars.length;
    const maps = model.exportedFeatureMaps();
    const checks = fx.attention === 'softmax'
      ? [['exact', { method: 'exact' }, fx.logits]]
      : [['FAVOR+, exported W', { method: 'favor', featureMaps: maps }, fx.logits], ['exact on its q, k', { method: 'exact' }, fx.exactLogits]];
    for (const [label, spec, expected] of checks) {
      assert.ok(expected, `${name}: fixture has ${label}`);
      const { logits } = model.forward(fx.text, spec);
      const got = rowsOf(logits.data, fx.rows, V);
      const err = maxRelDiff(got, f32(expected));
      t.diagnostic(`${name}, ${label}: max |Δlogit| / max |logit| = ${err.toExponential(2)} over ${fx.rows.length} rows of ${fx.text.length}`);
      assertBelow(err, 1e-4, `${name} ${label}`);
    }
    maps.forEach((m) => m.dispose());
    model.dispose();
  });
}

test('bits per character of the first 2,048 held-out characters from the whole prefix match the manifest', async (t) => {
  for (const [name, attention] of [['long-performer', 'favor'], ['long-softmax', 'exact']]) {
    const model = await loadModel(favor, name);
    const { chars, bpc } = model.record.firstCharsBpc;
    const maps = attention === 'favor' ? model.exportedFeatureMaps() : null;
    const bits = model.positionBits(held.slice(0, chars + 1), maps ? { method: 'favor', featureMaps: maps } : { method: 'exact' });
    const mean = bits.reduce((a, b) => a + b, 0) / bits.length;
    t.diagnostic(`${name} (${attention}): ${mean.toFixed(4)} bits/char over ${bits.length} characters; manifest (torch, float64) ${bpc}`);
    assert.equal(bits.length, chars);
    assert.ok(Math.abs(mean - bpc) < 0.02, `${name}: ${mean} vs ${bpc}`);
    maps?.forEach((m) => m.dispose());
    model.dispose();
  }
});

test('generation through FAVOR+ states: 4,096 characters in constant memory, drawn from the whole-text logits', async (t) => {
  const model = await loadModel(favor, 'long-performer');
  const maps = model.exportedFeatureMaps();
  const spec = { method: 'favor', featureMaps: maps };
  const prompt = held.slice(0, 1000);
  const run = model.startGeneration(prompt, spec, { seed: 5 });
  const bytes = run.stateBytes, chars = [], drawn = [];
  assert.ok(bytes > 0);
  for (let i = 0; i < 4096; i++) {
    const { char, logits } = run.next();  // appends the previous character first (from i = 1)
    chars.push(char);
    if (i < 64) drawn.push(Float32Array.from(logits));
    assert.equal(run.stateBytes, bytes, `stateBytes after ${i} characters`);
  }
  assert.equal(run.length, prompt.length + 4095);
  run.dispose();
  t.diagnostic(`state bytes over the 4 layers: ${bytes} at every position from ${prompt.length} to ${prompt.length + 4095}`);
  // the first 64 draws (positions 999-1062, across the training context) against one forward pass
  const { logits } = model.forward(prompt + chars.slice(0, 63).join(''), spec);
  const V = model.chars.length, rows = Array.from({ length: 64 }, (_, i) => prompt.length - 1 + i);
  const err = maxRelDiff(Float32Array.from(drawn.flatMap((r) => [...r])), rowsOf(logits.data, rows, V));
  t.diagnostic(`state path vs whole-text forward: max rel. logit difference ${err.toExponential(2)}`);
  assertBelow(err, 1e-4, 'state path logits');
  maps.forEach((m) => m.dispose());
  model.dispose();
});

test('a sliding window as long as the text is exact attention; a shorter one is not', async () => {
  const model = await loadModel(favor, 'long-softmax');
  const text = held.slice(0, 300);
  const full = model.forward(text, { method: 'exact' }).logits.data;
  const wide = model.forward(text, { method: 'exact', window: 300 }).logits.data;
  const narrow = model.forward(text, { method: 'exact', window: 64 }).logits.data;
  assertBelow(maxRelDiff(wide, full), 1e-6, 'window >= length');
  const V = model.chars.length;
  assertBelow(maxRelDiff(narrow.subarray(0, 64 * V), full.subarray(0, 64 * V)), 1e-6, 'rows inside the window');
  assert.ok(maxRelDiff(narrow.subarray(200 * V), full.subarray(200 * V)) > 1e-3, 'rows past the window differ');
  model.dispose();
});

test('FAVOR+ over a window: each row against the keys of its block and the 3 before, up to itself, as one call per row computes; a window past the text is the whole prefix; generation draws from the same windows', async () => {
  const model = await loadModel(favor, 'long-performer');
  const maps = model.exportedFeatureMaps();
  const [H, L, d, window] = [2, 150, 32, 64], block = window / 4;
  let s = 3;
  const normal = () => { s = (s * 1103515245 + 12345) >>> 0; return s / 4294967296 - 0.5; };
  const make = () => ({ data: Float32Array.from({ length: H * L * d }, normal), dims: [H, L, d] });
  const q = make(), k = make(), v = make();
  const got = model.attention({ method: 'favor', featureMaps: maps, window })(0, q, k, v).data;
  const rows = (x, from, count) => {
    const data = new Float32Array(H * count * d);
    for (let h = 0; h < H; h++) data.set(x.data.subarray((h * L + from) * d, (h * L + from + count) * d), h * count * d);
    return { data, dims: [H, count, d] };
  };
  let worst = 0;
  for (let i = 0; i < L; i++) {
    const first = Math.max(0, Math.floor(i / block) * block + block - window);
    const want = favor.favorAttention(rows(q, i, 1), rows(k, first, i + 1 - first), rows(v, first, i + 1 - first), { featureMap: maps[0] }).data;
    for (let h = 0; h < H; h++) {
      const a = got.subarray((h * L + i) * d, (h * L + i + 1) * d), b = want.subarray(h * d, (h + 1) * d);
      worst = Math.max(worst, maxRelDiff(a, b));
    }
  }
  // the same sums in another order (chunks of the causal sweep against one row's): float32 rounding
  assertBelow(worst, 1e-5, 'rows against their windows');
  const text = held.slice(0, 300), plain = model.forward(text, { method: 'favor', featureMaps: maps }).logits.data;
  assertBelow(maxRelDiff(model.forward(text, { method: 'favor', featureMaps: maps, window: 512 }).logits.data, plain), 1e-5, 'window past the text');
  assert.ok(maxRelDiff(model.forward(text, { method: 'favor', featureMaps: maps, window: 64 }).logits.data, plain) > 1e-3, 'a short window differs');
  for (const bad of [6, 0, 2.5, -4]) assert.throws(() => model.forward(text, { method: 'favor', featureMaps: maps, window: bad }), /attention\.window: .*expected a multiple of 4 >= 4/);
  for (const bad of [6, 0]) assert.throws(() => model.startGeneration(text, { method: 'favor', featureMaps: maps, window: bad }), /attention\.window: .*expected a multiple of 4 >= 4/);
  // Generation runs the same windows: each character drawn from the whole text's windowed logits
  // at its last row (40 characters: the window's blocks of 16 start 2 or 3 times on the way; the
  // exact window of 64 slides all along).
  const prefix = held.slice(0, 150), n = 40, V = model.chars.length;
  for (const spec of [{ method: 'favor', featureMaps: maps, window: 64 }, { method: 'exact', window: 64 }]) {
    const g = model.generate(prefix, n, spec, { seed: 5, logits: true });
    const { logits } = model.forward(prefix + g.text.slice(0, n - 1), spec);
    let drift = 0;
    for (let t = 0; t < n; t++) drift = Math.max(drift, maxRelDiff(g.logits[t], logits.data.subarray((prefix.length - 1 + t) * V, (prefix.length + t) * V)));
    assertBelow(drift, 1e-4, `generation against forward, ${spec.method} over a window`);
  }
  maps.forEach((m) => m.dispose());
  model.dispose();
});
