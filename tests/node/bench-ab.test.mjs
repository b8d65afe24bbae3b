// bench/ab.mjs, the side-by-side timing of two builds: on two instances of this build (an A/A
// run) every case runs, times both, and finds their outputs the same bits, round after round
// (the decode cases' states step on alike); an output one bit apart is found; a case it does not
// have is an error naming it.
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
