// The thread bench's way of timing calls side by side (bench/threads.mjs in Node,
// bench/threads-browser.mjs in a browser): every entry (ours at one T, onnxruntime-web at one T)
// called in turn, in rounds that rotate the order, so that a host whose speed drifts moves every
// T and both libraries alike. Self-contained: the folder bench/threads-bundle.sh packs carries it.

export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
// Per-round values kept in the results, to 4 digits.
export const kept = (xs) => xs.map((x) => Number(x.toPrecision(4)));

// Rounds beyond `reps` for calls that take little time: up to MORE_ROUNDS x reps, as many as fit
// in ROUNDS_MS of timed calls. On a shared host a short call's median of 9 read up to 2.8x apart
// between two runs of the same build; a median of more calls costs these calls little.
export const MORE_ROUNDS = 5, ROUNDS_MS = 2000;
export const roundsFor = (roundMs, reps) => Math.max(reps, Math.min(MORE_ROUNDS * reps, Math.floor(ROUNDS_MS / roundMs)));

// Each call is warmed up for at least 3 calls and WARMUP_MS first (bench/threads.mjs warmUp, and
// its twin in bench/lib/thread-worker.mjs, which awaits onnxruntime-web's calls), and so is each
// decoder's step (warmUpSteps).
export const WARMUP_MS = 500;

// A call under SHORT_MS is made once untimed right before its timed one: the call before it has
// just filled the caches with its own data, and its helpers went to sleep meanwhile.
export const SHORT_MS = 10;

// entries: { ms: a warmed-up call's mean, time(twice): (a promise of) one call's ms }. Returns
// each entry's times, one per round.
export async function timeInRounds(entries, reps) {
  const rounds = roundsFor(entries.reduce((sum, e) => sum + e.ms, 0), reps);
  const times = entries.map(() => []);
  for (let r = 0; r < rounds; ++r) {
    for (let j = 0; j < entries.length; ++j) {
      const i = (j + r) % entries.length;
      times[i].push(await entries[i].time(entries[i].ms < SHORT_MS));
    }
  }
  return times;
}

// A decoder's steps warmed up for `ms` on a state of its own (`options`), appending x: the engine
// compiles a function with its optimizing tier only once it has run a while, in the background
// (V8's dynamic tiering: until then a step ran up to twice as long, and 200 steps were not
// enough), and an exact cache grows with every append, so the measured state takes none of it.
export function warmUpSteps(favor, options, x, ms) {
  const warm = favor.createCausalState(options);
  for (let t0 = performance.now(); performance.now() - t0 < ms;) {
    for (let n = 0; n < 100; ++n) warm.append(x, x, x);
    warm.reset();
  }
  warm.dispose();
}
