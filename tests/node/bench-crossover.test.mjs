// The benchmark's crossover search (bench/lib/crossover.mjs) on synthetic ratio curves, where
// the answer is known: the grid bracket, the bisection on multiples of the step, the log-log
// interpolation, and the edge cases (already faster at the first grid point, never faster, a
// noisy grid point that is not faster below a faster one).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { interpolateCrossover, searchCrossover } from '../../bench/lib/crossover.mjs';

const grid = [64, 128, 256, 512, 1024, 2048, 4096];
const probe = (ratio) => {
  const calls = [];
  return { calls, ratioAt: async (L) => { calls.push(L); return ratio(L); } };
};

test('a power law ratio: bracket, bisection to the step, interpolation exact', async () => {
  // ratio = L / 700: FAVOR+ faster from L > 700; on multiples of 32 the first is 704.
  const { calls, ratioAt } = probe((L) => L / 700);
  const r = await searchCrossover(ratioAt, { grid, step: 32 });
  assert.deepEqual(r.bracket, [512, 1024]);
  assert.equal(r.crossover, 704);
  assert.ok(Math.abs(r.interpolated - 700) < 1e-9);
  assert.equal(r.below, false);
  assert.equal(r.never, false);
  // The grid stops at the first ratio >= 1.5 (L = 2048: 2.9); the bisection stays inside the bracket.
  assert.deepEqual(r.grid.map((p) => p[0]), [64, 128, 256, 512, 1024, 2048]);
  assert.ok(r.bisection.every(([L]) => L > 512 && L < 1024 && L % 32 === 0));
  assert.deepEqual(calls.slice(0, 6), [64, 128, 256, 512, 1024, 2048]);
});

test('faster from the first grid point: reported as at or below it', async () => {
  const r = await searchCrossover(probe(() => 2).ratioAt, { grid });
  assert.equal(r.below, true);
  assert.equal(r.crossover, 64);
  assert.equal(r.bisection.length, 0);
});

test('never faster on the grid', async () => {
  const r = await searchCrossover(probe(() => 0.5).ratioAt, { grid });
  assert.equal(r.never, true);
  assert.equal(r.crossover, null);
  assert.equal(r.grid.length, grid.length);
});

test('a grid point not faster above a faster one moves the bracket up', async () => {
  const table = { 64: 0.3, 128: 0.6, 256: 1.1, 512: 0.97, 1024: 1.3, 2048: 1.8 };
  const r = await searchCrossover(probe((L) => table[L] ?? (L < 1024 ? 0.99 : 1.2)).ratioAt, { grid, step: 64 });
  assert.deepEqual(r.bracket, [512, 1024]);
  assert.ok(r.crossover > 512 && r.crossover <= 1024);
});

test('interpolation: undefined for equal or non-positive ratios', () => {
  assert.equal(interpolateCrossover([256, 1], [512, 1]), null);
  assert.equal(interpolateCrossover([256, 0], [512, 2]), null);
  assert.ok(Math.abs(interpolateCrossover([256, 0.5], [1024, 2]) - 512) < 1e-9);
});
