// The row inspector's pure parts (demo/src/row-inspector.js): how many of a row's weights a log
// axis cannot draw, of A and of Â; the heading that says so; its key axis (the ticks themselves:
// demo-plot.test.mjs); the weight axis of a row whose weights have no range (one key).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { flatRowDomain, inspectorSub, keyAxis, offLogAxis } from '../../demo/src/row-inspector.js';

test('offLogAxis: A\'s and Â\'s weights ≤ 0 or not finite, each counted, over entries [start, start + count) only', () => {
  // a Performer's last row: A underflows to 0 for far keys, Â is ≤ 0 for others
  const A = Float32Array.from([9, 0, 0, 0.2, 1e-30, 0.3, 0, 0.5, 9]);
  const Ahat = Float32Array.from([-9, -0.1, 0.1, 0, 0.3, NaN, Infinity, 0.4, -9]);
  assert.deepEqual(offLogAxis(A, Ahat, 1, 7), { exact: 3, approx: 4 });
  assert.deepEqual(offLogAxis(A, Ahat, 3, 2), { exact: 0, approx: 1 });
  assert.deepEqual(offLogAxis(A, A, 3, 3), { exact: 0, approx: 0 });
  assert.deepEqual(offLogAxis(Float32Array.from([-1, NaN]), Float32Array.from([1, 1]), 0, 2), { exact: 2, approx: 0 });
});

test('inspectorSub: KL(Aᵢ ‖ Âᵢ); on a log axis A\'s and Â\'s weights off it, each counted, singular and plural; on a linear axis Â\'s ≤ 0 only', () => {
  const sub = (counts, log, more = {}) => inspectorSub({ i: 255, kl: 0.5561, rows: null, total: 256, L: 256, counts, log, ...more });
  assert.equal(sub({ exact: 128, approx: 13 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 128 weights of A and 13 of Â ≤ 0 (off the log axis)');
  assert.equal(sub({ exact: 1, approx: 1 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 1 weight of A and 1 of Â ≤ 0 (off the log axis)');
  assert.equal(sub({ exact: 0, approx: 13 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 13 weights of Â ≤ 0 (off the log axis)');
  assert.equal(sub({ exact: 0, approx: 1 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 1 weight of Â ≤ 0 (off the log axis)');
  assert.equal(sub({ exact: 128, approx: 0 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 128 weights of A ≤ 0 (off the log axis)');
  assert.equal(sub({ exact: 1, approx: 0 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 1 weight of A ≤ 0 (off the log axis)');
  assert.equal(sub({ exact: 0, approx: 0 }, true), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556');
  // linear: A's zeros are drawn at 0; Â's weights ≤ 0 are drawn below it and said
  assert.equal(sub({ exact: 128, approx: 13 }, false), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 13 weights of Â ≤ 0');
  assert.equal(sub({ exact: 128, approx: 1 }, false), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556, 1 weight of Â ≤ 0');
  assert.equal(sub({ exact: 128, approx: 0 }, false), 'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556');
  // a window of a longer text: the KL over every key, the counts over those plotted
  assert.equal(sub({ exact: 2, approx: 0 }, true, { rows: {}, total: 1200 }),
    'query i = 255: KL(Aᵢ ‖ Âᵢ) = 0.556 over all 1,200 keys; plotted: the last 256, 2 weights of A ≤ 0 (off the log axis)');
  assert.doesNotMatch(sub({ exact: 0, approx: 0 }, true), /_/, 'subscripts, as the error study writes them');
});

test('keyAxis: the keys 0 … S − 1, each half a key from the frame, whole-number ticks; the causal label', () => {
  for (const S of [1, 2, 3, 256]) {
    const x = keyAxis(S, S - 1, true);
    assert.deepEqual(x.domain, [-0.5, S - 0.5]);
    assert.equal(x.integer, true);
    assert.equal(x.log, false);
    assert.equal(x.label, `key j (causal: j ≤ ${S - 1})`);
  }
  assert.equal(keyAxis(64, 3, false).label, 'key j');
  assert.equal(keyAxis(64, 3, false).format(7), '7');
});

test('flatRowDomain: a row of one weight (or all equal) gets an axis from 0, or a decade below on a log axis, to a little over it', () => {
  assert.deepEqual(flatRowDomain([1, 1], false), [0, 1.1]);
  assert.deepEqual(flatRowDomain([1, 1], true), [0.1, 1.25]);
  assert.deepEqual(flatRowDomain([0.25, 0.25, 0.25, 0.25], false), [0, 0.275]);
  // what a log axis cannot draw does not count; nothing drawable, or a range: the plot's own
  assert.deepEqual(flatRowDomain([1, 0, NaN, 1], true), [0.1, 1.25]);
  assert.equal(flatRowDomain([1, 0], false), null);
  assert.equal(flatRowDomain([0.2, 0.8], true), null);
  assert.equal(flatRowDomain([0, -1], true), null);
  assert.equal(flatRowDomain([], false), null);
  assert.equal(flatRowDomain([0, 0], false), null);
});
