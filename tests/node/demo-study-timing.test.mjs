// The speed study's timing and progress (demo/src/study-timing.js), on a fake clock whose calls
// take what a model says: how many runs timeIt makes, what timingCost predicts of them, when exact
// attention stops, and the progress bar against the share of the time actually spent.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { median, remainingMs, sweepLengths, timeIt, timingCost } from '../../demo/src/study-timing.js';

import { rng } from './helpers.mjs';

// A clock that only calls move: call(ms) returns a function that takes ms of it.
function fakeClock() {
  let t = 0;
  return { now: () => t, call: (ms) => () => { t += typeof ms === 'function' ? ms() : ms; } };
}

const LS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];
const BUDGET = 3000;

test('median: the middle value, the upper one of an even count', () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 3);
  assert.equal(median([7]), 7);
});

test('timeIt: 3 runs at least, about 250 ms or 25 runs, one run past a second; timingCost says what it spends', () => {
  // ms per run -> runs expected (written out, not derived from the code's constants)
  const cases = [[0, 25], [0.5, 25], [8, 25], [10, 25], [12.5, 20], [20, 13], [50, 5], [83, 4], [100, 3], [400, 3],
    [1000, 3], [1000.5, 1], [4000, 1]];
  for (const [ms, runs] of cases) {
    const clock = fakeClock();
    let count = 0;
    const call = clock.call(ms);
    const result = timeIt(() => { count++; call(); }, clock.now);
    assert.equal(count, runs, `${ms} ms per run`);
    assert.equal(result, ms);
    assert.equal(timingCost(ms), clock.now(), `timingCost(${ms})`);
  }
  // the median of what the runs took
  const clock = fakeClock(), times = [30, 10, 90, 20, 40];
  let i = 0;
  assert.equal(timeIt(clock.call(() => times[i++ % times.length]), clock.now), 30);
});

// Calls that take a·L (FAVOR+) and b·L² (exact) ms, as the two grow.
const modelCalls = (clock, a, b, noise = () => 1) => (L) => ({
  favor: clock.call(() => a * L * noise()),
  exact: clock.call(() => b * L * L * noise()),
});

test('the sweep: exact is timed while its last time × 4 is within the budget, FAVOR+ at every L', async () => {
  for (const b of [1e-6, 4e-6, 2e-4, 1]) {
    const clock = fakeClock(), reports = [];
    await sweepLengths({ Ls: LS, budgetMs: BUDGET, callsAt: modelCalls(clock, 0.01, b), report: (r) => reports.push(r), now: clock.now, pause: async () => {} });
    assert.deepEqual(reports.map((r) => r.L), LS);
    // times are differences of the clock's readings: equal to rounding
    const near = (x, y) => Math.abs(x - y) <= 1e-12 * y;
    for (const r of reports) assert.ok(near(r.favorMs, 0.01 * r.L), `FAVOR+ at L = ${r.L}: ${r.favorMs}`);
    // the first L is always timed; each later one while the one before took <= budget / 4
    const timed = reports.filter((r) => r.exactMs !== null).map((r) => r.L);
    const expected = [LS[0]];
    for (let i = 1; i < LS.length && b * LS[i - 1] ** 2 * 4 <= BUDGET; i++) expected.push(LS[i]);
    assert.deepEqual(timed, expected, `b = ${b}`);
    for (const r of reports) if (r.exactMs !== null) assert.ok(near(r.exactMs, b * r.L * r.L), `exact at L = ${r.L}: ${r.exactMs}`);
  }
});

test('the progress bar is the share of the study\'s time spent, exactly when times follow L and L²', async () => {
  for (const [a, b] of [[0.01, 1e-6], [0.001, 4e-6], [0.05, 1e-7], [0.002, 1e-5]]) {
    const clock = fakeClock(), seen = [];
    const total = await sweepLengths({
      Ls: LS, budgetMs: BUDGET, callsAt: modelCalls(clock, a, b),
      report: (r) => seen.push({ ...r, at: clock.now() }), now: clock.now, pause: async () => {},
    });
    assert.equal(total, clock.now());
    for (const r of seen) {
      assert.ok(Math.abs(r.fraction - r.at / total) <= 1e-12, `a = ${a}, b = ${b}, L = ${r.L}: ${r.fraction} against ${r.at / total}`);
    }
    assert.equal(seen.at(-1).fraction, 1);
  }
});

test('remainingMs: what the rest of a sweep takes, from any length on', async () => {
  const a = 0.01, b = 1e-6;
  const clock = fakeClock(), at = [];
  const total = await sweepLengths({ Ls: LS, budgetMs: BUDGET, callsAt: modelCalls(clock, a, b), report: (r) => at.push([r, clock.now()]), now: clock.now, pause: async () => {} });
  at.forEach(([r, t], i) => {
    const rest = remainingMs({ L: r.L, favorMs: r.favorMs, exactMs: r.exactMs, rest: LS.slice(i + 1), budgetMs: BUDGET });
    assert.ok(Math.abs(rest - (total - t)) <= 1e-9 * total, `after L = ${r.L}: ${rest} against ${total - t}`);
  });
  assert.equal(remainingMs({ L: 128, favorMs: 1, exactMs: null, rest: [], budgetMs: BUDGET }), 0);
});

test('with noisy times the bar never goes back, and ends full', async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const g = rng(seed), clock = fakeClock(), fractions = [];
    const noise = () => 0.7 + 0.6 * g.uniform();
    await sweepLengths({ Ls: LS, budgetMs: BUDGET, callsAt: modelCalls(clock, 0.01, 2e-6, noise), report: (r) => fractions.push(r.fraction), now: clock.now, pause: async () => {} });
    for (let i = 1; i < fractions.length; i++) assert.ok(fractions[i] >= fractions[i - 1], `seed ${seed}`);
    assert.equal(fractions.at(-1), 1);
    assert.ok(fractions.every((f) => f > 0 && f <= 1));
  }
});
