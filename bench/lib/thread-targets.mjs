// The many-core targets judged on the thread bench's results (bench/threads.mjs): the speed-ups
// of the long calls at 16 threads, onnxruntime-web's time over ours at every T, and no call slower
// with more threads. Each run is judged on its own; a target is met where every run meets it.
// Self-contained: the folder bench/threads-bundle.sh packs for a lent machine carries it.

// The values xs as "lo–hi" in the format f, or one value where both read alike.
export const range = (xs, f) => {
  const lo = Math.min(...xs), hi = Math.max(...xs);
  return f(lo) === f(hi) ? f(lo) : `${f(lo)}–${f(hi)}`;
};

// Slower by more than this with more threads (a time above the best at fewer threads, a rate
// below it) counts against "more threads are never slower", where the calls tell the two cells
// apart too: the cells' calls of the same round (made within the same second, every T in turn)
// compared, the one slower in at least three rounds of four. Runs that kept only medians are
// judged by the medians alone. On a shared host the same work (the exact decode of one head,
// which takes one thread at every T) read up to 1.46x apart between T's at the medians.
export const NOISE = 1.1;
const APART = 0.75;

// How much slower cell x is than cell `best` (> 1: slower; rows of rates for decode): the ratio of
// their medians, the share of the rounds in which x was the slower, and whether that tells them
// apart (true where either cell kept no rounds).
export function slowdown(x, best, decode) {
  const ratio = decode ? best.ours / x.ours : x.ours / best.ours;
  const paired = x.samples?.length > 0 && x.samples.length === best.samples?.length;
  if (!paired) return { ratio, apart: true };
  const slowerRounds = x.samples.filter((t, r) => (decode ? t < best.samples[r] : t > best.samples[r])).length;
  const share = slowerRounds / x.samples.length;
  return { ratio, share, apart: share >= APART };
}

// The verdict lines for `runs` (each a run's rows: { id, threads, ours, samples?, peer? }) at the
// thread counts Ts, the calls named by `cases` (bench/lib/thread-cases.mjs).
export function manyCoreTargets(runs, Ts, cases) {
  const at = (rows, id, T) => rows.find((x) => x.id === id && x.threads === T);
  const label = (id) => cases[id].label.replace(/, tokens\/s$/, '');
  const verdict = (ok) => (ok ? '**met**' : '**not met**');
  const lines = ['Against the many-core targets, each run on its own (met where every run meets it):'];
  for (const [id, T, want] of [['favor8long', 16, 10], ['favor1long', 16, 10], ['exact8', 16, 12], ['favor1', 8, 3]]) {
    const xs = runs.map((rows) => at(rows, id, 1) && at(rows, id, T) && at(rows, id, 1).ours / at(rows, id, T).ours).filter(Boolean);
    if (xs.length) lines.push(`- ${label(id)}: ≥ ${want}× at T = ${T}: ${range(xs, (v) => v.toFixed(1))}×, ${verdict(xs.every((v) => v >= want))}.`);
  }
  const peerIds = [...new Set(runs.flat().filter((x) => x.peer).map((x) => x.id))];
  if (peerIds.length) {
    const worst = peerIds.map((id) => {
      const ratios = runs.flatMap((rows) => rows.filter((x) => x.id === id && x.peer).map((x) => ({ T: x.threads, v: x.peer / x.ours })));
      const low = ratios.reduce((a, b) => (b.v < a.v ? b : a));
      return { id, low, ok: ratios.every((x) => x.v >= 1.5) };
    });
    lines.push(`- onnxruntime-web's time ≥ 1.5× ours at every T, lowest ratio per call: ${worst.map(({ id, low }) => `${label(id)} ${low.v.toFixed(2)}× (T = ${low.T})`).join('; ')}; ${verdict(worst.every((w) => w.ok))}.`);
  }
  const slower = [], blurred = [];
  for (const id of Object.keys(cases).filter((i) => !cases[i].weak)) {
    const decode = cases[id].method === 'decode';
    for (const T of Ts.slice(1)) {
      const found = runs.map((rows) => {
        const x = at(rows, id, T), before = Ts.filter((t) => t < T).map((t) => at(rows, id, t)).filter(Boolean);
        if (!x || !before.length) return null;
        const best = before.reduce((a, b) => ((decode ? b.ours > a.ours : b.ours < a.ours) ? b : a));
        return slowdown(x, best, decode);
      }).filter((f) => f && f.ratio > NOISE);
      const text = (fs) => `${label(id)} at T = ${T} (${Math.max(...fs.map((f) => f.ratio)).toFixed(2)}× slower than its best at fewer threads)`;
      const apart = found.filter((f) => f.apart);
      if (apart.length) slower.push(text(apart));
      else if (found.length) blurred.push(`${text(found)}, the slower in ${found.map((f) => `${Math.round(100 * f.share)}%`).join(' and ')} of the rounds`);
    }
  }
  const paired = runs.some((rows) => rows.some((x) => x.samples?.length));
  const within = blurred.length
    ? ` Slower by more than ${Math.round((NOISE - 1) * 100)}% at the medians, but not in three rounds of four (within the host's noise): ${blurred.join('; ')}.`
    : '';
  lines.push(`- More threads never slower (by more than ${Math.round((NOISE - 1) * 100)}% at the medians${paired ? ', and in at least three rounds of four' : ''}) in any run: ${slower.length ? `${slower.join('; ')}; ${verdict(false)}` : verdict(true)}.${within}`);
  return lines;
}
