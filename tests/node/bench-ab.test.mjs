// bench/ab.mjs, the side-by-side timing of two builds: on two instances of this build (an A/A
// run) every case runs, times both, and finds their outputs the same bits, round after round
// (the decode cases' states step on alike); in bursts each round makes that many calls on each;
// an output one bit apart is found; a case it does not have is an error naming it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { CASES, compare } from '../../bench/ab.mjs';

test('bench/ab.mjs: two instances of one build give the same bits in every case, and a time each', async () => {
  const instances = [await loadFavor({ threads: 1 }), await loadFavor({ threads: 1 })];
  const ids = Object.keys(CASES);
  const rows = compare(instances, ids, { rounds: 2, warmupMs: 0 });
  assert.deepEqual(rows.map((r) => r.id), ids);
  for (const r of rows) {
    assert.ok(r.a > 0 && r.b > 0 && Number.isFinite(r.a) && Number.isFinite(r.b), `${r.id}: times ${r.a}, ${r.b}`);
    assert.equal(r.same, true, `${r.id}: the two instances' outputs differ`);
  }
  // Bursts of 3: 3 warm-up calls each, then 3 calls each in each of 2 rounds.
  const calls = [0, 0];
  const counted = instances.map((favor, i) => {
    const c = Object.create(favor);
    c.exactAttention = (...args) => (calls[i] += 1, favor.exactAttention(...args));
    return c;
  });
  const [burst] = compare(counted, ['exact'], { rounds: 2, burst: 3, warmupMs: 0 });
  assert.deepEqual(calls, [9, 9]);
  assert.equal(burst.same, true);
  assert.ok(burst.a > 0 && burst.b > 0);
  // B's exact attention one float step off in its last value: found.
  const nudged = Object.create(instances[1]);
  nudged.exactAttention = (...args) => {
    const out = instances[1].exactAttention(...args);
    out.data[out.data.length - 1] = Math.fround(out.data[out.data.length - 1] * (1 + 2 ** -22));
    return out;
  };
  assert.equal(compare([instances[0], nudged], ['exact'], { rounds: 1, warmupMs: 0 })[0].same, false);
  assert.throws(() => compare(instances, ['favour'], { rounds: 1 }), (e) => e instanceof RangeError && /'favour'/.test(e.message));
});
