// Cross-platform determinism of the sampler: the wasm builds (SIMD, scalar and, where the engine
// runs it, relaxed SIMD: no fused operation in sampling) reproduce, bit for bit, the projections
// generated natively by tests/fixtures/projection-golden.cpp and stored in
// tests/fixtures/projection-golden.json (and, for the sampling modes added later, in
// tests/fixtures/projection-golden-sampling.json); and the wasm builds agree bit for bit on
// larger projections too.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { RELAXED_SIMD_SUPPORTED, SIMD_SUPPORTED, assertBitIdentical, hexBits } from './helpers.mjs';

const golden = JSON.parse(await readFile(new URL('../fixtures/projection-golden.json', import.meta.url), 'utf8'));
const newer = JSON.parse(await readFile(new URL('../fixtures/projection-golden-sampling.json', import.meta.url), 'utf8'));

const builds = {};
before(async () => {
  builds.scalar = await loadFavor({ simd: false });
  if (SIMD_SUPPORTED) builds.simd = await loadFavor({ simd: 'fixed' });
  if (RELAXED_SIMD_SUPPORTED) builds.relaxed = await loadFavor({ simd: 'relaxed', threads: 1 });
});

test('the fixture holds the three required cases', () => {
  const keys = golden.cases.map((c) => `${c.dim}/${c.features}/${c.sampling}/${c.seed}`);
  assert.deepEqual(keys, ['3/5/orthogonal/12345', '2/4/iid/7', '4/6/orthogonal-fixed/99']);
  const newerKeys = newer.cases.map((c) => `${c.dim}/${c.features}/${c.sampling}/${c.seed}`);
  assert.deepEqual(newerKeys, ['5/7/simplex/2023', '3/4/structured/16', '8/10/structured/99']);
  for (const c of [...golden.cases, ...newer.cases]) {
    assert.equal(c.bits.length, c.dim * c.features);
    // the decimal values in the fixture are the same floats (a check on the fixture itself)
    const fromBits = new Float32Array(new Uint32Array(c.bits.map((h) => parseInt(h, 16))).buffer);
    assert.deepEqual(Array.from(fromBits), c.values.map(Math.fround));
  }
});

for (const build of ['simd', 'scalar', 'relaxed']) {
  test(`${build} wasm reproduces the native golden projections bit for bit`, (t) => {
    if (!builds[build]) return t.skip(`no wasm ${build === 'relaxed' ? 'relaxed ' : ''}SIMD in this engine`);
    const favor = builds[build];
    assert.equal(favor.info.simd, build !== 'scalar');
    assert.equal(favor.info.relaxedSimd, build === 'relaxed');
    for (const c of [...golden.cases, ...newer.cases]) {
      const map = favor.createFeatureMap({ dim: c.dim, features: c.features, sampling: c.sampling, seed: c.seed });
      const w = map.projection;
      assert.deepEqual(w.dims, [c.features, c.dim]);
      assert.deepEqual(hexBits(w.data), c.bits, `${build}: ${c.sampling} seed ${c.seed}`);
      // redraw reaches the same bits from another seed
      map.redraw(c.seed + 1).redraw(c.seed);
      assert.deepEqual(hexBits(map.projection.data), c.bits, `${build}: redraw to seed ${c.seed}`);
      // the kernel does not influence sampling
      const hyper = favor.createFeatureMap({ dim: c.dim, features: c.features, sampling: c.sampling, seed: c.seed, kernel: 'hyperbolic' });
      assert.deepEqual(hexBits(hyper.projection.data), c.bits);
      map.dispose();
      hyper.dispose();
    }
  });
}

test('every wasm build samples bit-identical projections for many shapes and seeds', (t) => {
  if (!builds.simd) return t.skip('no wasm SIMD in this engine');
  const others = [builds.simd, builds.relaxed].filter(Boolean);
  for (const sampling of ['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured']) {
    for (const [d, m] of [[1, 1], [16, 40], [64, 256], [7, 100]]) {
      for (const seed of [0, 42, 2 ** 40 + 3]) {
        const b = builds.scalar.createFeatureMap({ dim: d, features: m, sampling, seed });
        for (const favor of others) {
          const a = favor.createFeatureMap({ dim: d, features: m, sampling, seed });
          assertBitIdentical(a.projection.data, b.projection.data, `${favor.info.relaxedSimd ? 'relaxed' : 'simd'} ${sampling} d=${d} m=${m} seed=${seed}`);
          a.dispose();
        }
        b.dispose();
      }
    }
  }
});
