// How the speed study times a call, and how long the rest of the study will take. Its progress bar
// follows the time. Counting work instead filled the bar wrongly: it counted exact attention's
// quadratic work at the largest L, which exact attention never reaches (it stops at its time
// budget), so the bar showed 0-6 % for most of a run before jumping to the end.
// The clock and the calls are parameters, for the tests.

const MIN_RUNS = 3, MIN_MS = 250, MAX_RUNS = 25;
const ONE_RUN_MS = 1000;  // one run of a call this slow is enough

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[s.length >> 1];
}

// Times fn over at least MIN_RUNS runs and about MIN_MS in all (at most MAX_RUNS runs), and
// returns the median time. `now` is the clock (ms).
export function timeIt(fn, now = () => performance.now()) {
  const times = [];
  let spent = 0;
  while (times.length < MIN_RUNS || (spent < MIN_MS && times.length < MAX_RUNS)) {
    const t0 = now();
    fn();
    const t = now() - t0;
    times.push(t);
    spent += t;
    if (t > ONE_RUN_MS) break;
  }
  return median(times);
}

// What timeIt spends on a call that takes t ms each run.
export function timingCost(t) {
  if (t > ONE_RUN_MS) return t;
  const runs = t > 0 ? Math.min(MAX_RUNS, Math.max(MIN_RUNS, Math.ceil(MIN_MS / t))) : MAX_RUNS;
  return runs * t;
}

// Whether exact attention is timed at the next length after taking exactMs at this one: it is
// quadratic, so the next would take about four times as long.
export const exactGoesOn = (exactMs, budgetMs) => exactMs * 4 <= budgetMs;

// The time (ms) the study still needs for the lengths `rest` after timing length L: FAVOR+ took
// favorMs there and grows with L; exact took exactMs (null: not timed there) and grows with L²,
// timed while exactGoesOn.
export function remainingMs({ L, favorMs, exactMs, rest, budgetMs }) {
  let total = 0, previous = L, f = favorMs, e = exactMs !== null && exactGoesOn(exactMs, budgetMs) ? exactMs : null;
  for (const next of rest) {
    const r = next / previous;
    previous = next;
    f *= r;
    total += timingCost(f);
    if (e !== null) {
      e *= r * r;
      total += timingCost(e);
      if (!exactGoesOn(e, budgetMs)) e = null;
    }
  }
  return total;
}

// The speed study's sweep over the lengths Ls (each double the one before): at each L, callsAt(L)
// gives { favor, exact }, each timed with timeIt (exact while exactGoesOn), then
// report({ L, favorMs, exactMs, fraction }) is called, fraction being the share of the study's
// time spent so far (never less than the last), and pause() awaited. Returns the time it took.
export async function sweepLengths({ Ls, budgetMs, callsAt, report, now = () => performance.now(),
  pause = () => new Promise((resolve) => setTimeout(resolve, 0)) }) {
  let exactOn = true, fraction = 0;
  const t0 = now();
  for (const [i, L] of Ls.entries()) {
    const calls = callsAt(L);
    const favorMs = timeIt(calls.favor, now);
    const exactMs = exactOn ? timeIt(calls.exact, now) : null;
    exactOn = exactMs !== null && exactGoesOn(exactMs, budgetMs);
    const elapsed = now() - t0;
    fraction = Math.max(fraction, elapsed / (elapsed + remainingMs({ L, favorMs, exactMs, rest: Ls.slice(i + 1), budgetMs })));
    report({ L, favorMs, exactMs, fraction });
    await pause();
  }
  return now() - t0;
}
