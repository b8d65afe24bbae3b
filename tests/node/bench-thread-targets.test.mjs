// The thread bench's many-core verdicts (bench/lib/thread-targets.mjs) on synthetic runs whose
// ratios are known: the speed-up and onnxruntime-web targets on either side of their thresholds,
// and "more threads never slower" told from the host's noise by the cells' rounds.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { manyCoreTargets, slowdown } from '../../bench/lib/thread-targets.mjs';

const CASES = {
  favor8long: { label: 'F8L', method: 'favor' },
  favor1long: { label: 'F1L', method: 'favor' },
  exact8: { label: 'E8', method: 'exact' },
  favor1: { label: 'F1', method: 'favor' },
  small: { label: 'S', method: 'favor' },
  decode8: { label: 'D8, tokens/s', method: 'decode' },
  weak: { label: 'W', method: 'favor', weak: true },
};
const Ts = [1, 2, 4, 8, 16];
const row = (id, threads, ours, extra = {}) => ({ id, threads, ours, ...extra });
// A call whose time is t1 / speedup(T) at every T.
const scaling = (id, t1, speedups, extra = () => ({})) => Ts.map((T, i) => row(id, T, t1 / speedups[i], extra(T)));
const line = (lines, start) => lines.find((l) => l.startsWith(start));

test('the speed-up targets hold at their thresholds and fail just below them', () => {
  const at = (s16, e16, f8) => [
    ...scaling('favor8long', 100, [1, 2, 4, 8, s16]), ...scaling('favor1long', 100, [1, 2, 4, 8, s16]),
    ...scaling('exact8', 100, [1, 2, 4, 8, e16]), ...scaling('favor1', 30, [1, 2, 2.5, f8, f8]),
  ];
  const met = manyCoreTargets([at(10, 12, 3)], Ts, CASES);
  assert.match(line(met, '- F8L:'), /10\.0×, \*\*met\*\*/);
  assert.match(line(met, '- E8:'), /12\.0×, \*\*met\*\*/);
  assert.match(line(met, '- F1:'), /3\.0×, \*\*met\*\*/);
  const short = manyCoreTargets([at(9.9, 11.9, 2.9)], Ts, CASES);
  for (const id of ['F8L', 'F1L', 'E8', 'F1']) assert.match(line(short, `- ${id}:`), /\*\*not met\*\*/);
  // Two runs: met only where both meet it, the range shown.
  const two = manyCoreTargets([at(10.5, 12, 3), at(9.5, 12, 3)], Ts, CASES);
  assert.match(line(two, '- F8L:'), /9\.5–10\.5×, \*\*not met\*\*/);
});

test("onnxruntime-web's time over ours must reach 1.5x at every T", () => {
  const rows = (low) => Ts.map((T) => row('favor1', T, 10 / T, { peer: (T === 4 ? low : 2) * (10 / T) }));
  const ok = manyCoreTargets([rows(1.5)], Ts, CASES);
  assert.match(line(ok, "- onnxruntime-web"), /F1 1\.50× \(T = 4\); \*\*met\*\*/);
  const bad = manyCoreTargets([rows(1.49)], Ts, CASES);
  assert.match(line(bad, "- onnxruntime-web"), /F1 1\.49× \(T = 4\); \*\*not met\*\*/);
});

test('a cell slower in most rounds counts against "never slower"; one slower only at the median does not', () => {
  const rounds = (xs) => ({ samples: xs });
  // T = 8's best, 1.0 ms a call; T = 16 1.3 ms at the median.
  const best = row('small', 8, 1.0, rounds([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]));
  const always = row('small', 16, 1.3, rounds([1.3, 1.3, 1.3, 1.3, 1.2, 1.4, 1.3, 1.3]));
  assert.deepEqual(slowdown(always, best, false), { ratio: 1.3, share: 1, apart: true });
  // Slower in 5 rounds of 8 (the host slowed those rounds' other calls less): not told apart.
  const mixed = row('small', 16, 1.3, rounds([1.3, 1.3, 1.3, 1.3, 1.3, 0.9, 0.9, 0.9]));
  assert.equal(slowdown(mixed, best, false).share, 5 / 8);
  assert.equal(slowdown(mixed, best, false).apart, false);
  // Six of 8 (75%) is enough.
  assert.equal(slowdown(row('small', 16, 1.3, rounds([1.3, 1.3, 1.3, 1.3, 1.3, 1.3, 0.9, 0.9])), best, false).apart, true);
  // Decode is a rate: slower is fewer tokens per second.
  const rate = row('decode8', 8, 30000, rounds([30000, 30000, 30000, 30000]));
  assert.equal(slowdown(row('decode8', 16, 25000, rounds([25000, 25000, 25000, 31000])), rate, true).apart, true);
  assert.equal(slowdown(row('decode8', 16, 25000, rounds([25000, 25000, 31000, 31000])), rate, true).apart, false);
  // Without rounds (runs that kept only medians), the medians decide.
  assert.equal(slowdown(row('small', 16, 1.3), row('small', 8, 1.0), false).apart, true);

  const run = (t16) => [row('small', 1, 4.0, rounds(Array(8).fill(4))), row('small', 2, 2.0, rounds(Array(8).fill(2))),
    row('small', 4, 1.2, rounds(Array(8).fill(1.2))), best, t16];
  const flagged = line(manyCoreTargets([run(always)], Ts, CASES), '- More threads');
  assert.match(flagged, /S at T = 16 \(1\.30× slower than its best at fewer threads\); \*\*not met\*\*/);
  const noise = line(manyCoreTargets([run(mixed)], Ts, CASES), '- More threads');
  assert.match(noise, /in any run: \*\*met\*\*\. Slower by more than 10% at the medians, but not in three rounds of four/);
  assert.match(noise, /S at T = 16 \(1\.30× slower than its best at fewer threads\), the slower in 63% of the rounds/);
  // 1.09x slower in every round is within the 10% allowed.
  const slight = row('small', 16, 1.09, rounds(Array(8).fill(1.09)));
  assert.match(line(manyCoreTargets([run(slight)], Ts, CASES), '- More threads'), /in any run: \*\*met\*\*\.$/);
  // Weak-scaling rows are not judged: their work grows with T.
  const weak = [row('weak', 1, 1), row('weak', 16, 2)];
  assert.match(line(manyCoreTargets([weak], Ts, CASES), '- More threads'), /\*\*met\*\*/);
});
