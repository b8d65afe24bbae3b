// One machine's table of the thread bench (bench/threads.mjs in Node, bench/threads-browser.mjs in
// a browser): each call's time at every T, its speed-up, onnxruntime-web's beside it, and what the
// machine's run says of the many-core targets and of the calling thread's serial part.
// Self-contained: the folder bench/threads-bundle.sh packs for a lent machine carries it.
import { CASES } from './thread-cases.mjs';
import { manyCoreTargets, range } from './thread-targets.mjs';

// JSON with one line per array of numbers (a cell's calls), not one per number.
export const toJson = (x) => `${JSON.stringify(x, null, 1).replace(/\[\s+(-?[\d.e+-]+(?:,\s+-?[\d.e+-]+)*)\s+\]/g, (_, list) => `[${list.split(/,\s+/).join(', ')}]`)}\n`;

export const fmt = (x, decode) => (decode ? `${(x / 1000).toFixed(1)}k` : x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(2));

// One machine's table: each case's time (tokens/s for decode) at every T, its speed-up over one
// thread, and onnxruntime-web's time and ours ÷ its at the same T where it ran. A machine with
// several runs (--merge A.json,B.json) shows each cell's range over them, every speed-up and ratio
// taken within its own run.
export function machineTable(r, { reps }) {
  const runs = [r.rows, ...(r.runs ?? [])];
  const Ts = [...new Set(r.rows.map((x) => x.threads))].sort((a, b) => a - b);
  const lines = [`### ${r.cpu}, ${r.cores} cores (${r.browser ?? `Node ${r.node}`}, ${r.date})`, '', ...(r.note ? [r.note, ''] : []),
    ...(r.interleaved ? [] : ['Measured one T after another (all calls at one T, then the next), before the bench interleaved them.', '']),
    ...(r.peerInterleaved || !r.rows.some((x) => x.peer) ? [] : [`onnxruntime-web was measured in a process per T${r.rows.some((x) => x.peerRuns) ? ' before ours at that T and again after, the faster of the two kept' : ''} (this run came before its calls were made in the same rounds as ours): its cells and ours were measured at other moments, so a host whose speed drifts moves the ratios.`, '']),
    ...(r.partial ? [`This run ended before it finished (the rows it measured; ${r.interleaved ? 'each call at every T, in the order of the table, decode last' : 'the order was one thread, the most threads, then the rest, decode last'}).`, ''] : []),
    ...(r.rows.some((x) => x.samples) ? [] : [`Every cell the median of ${r.reps ?? reps} calls: ${runs.length > 1 ? 'these runs' : 'this run'} came before calls that take little time got more rounds.`, '']),
    ...(runs.length > 1 ? [`Ranges over ${runs.length} runs of the same build; each speed-up and each ratio to onnxruntime-web taken within its run.`, ''] : []),
    `| call | ${Ts.map((t) => `T = ${t}`).join(' | ')} | best speed-up |`, `|---|${Ts.map(() => '---:').join('|')}|---:|`];
  const times = (x) => x.toFixed(1);
  for (const id of [...new Set(r.rows.map((x) => x.id))]) {
    const decode = id.startsWith('decode');
    // Per run: its row at every T and each row's speed-up over that run's one thread.
    const perRun = runs.map((rows) => {
      const at = Ts.map((t) => rows.find((x) => x.id === id && x.threads === t));
      const one = at[0]?.ours;
      return at.map((x) => x && { ...x, speed: decode ? x.ours / one : one / x.ours });
    }).filter((at) => at.some(Boolean));
    const cell = (i) => {
      const xs = perRun.map((at) => at[i]).filter(Boolean);
      return xs.length ? `${range(xs.map((x) => x.ours), (v) => fmt(v, decode))} (${range(xs.map((x) => x.speed), times)}×)` : '—';
    };
    const best = perRun.map((at) => Math.max(...at.filter(Boolean).map((x) => x.speed)));
    // weak scaling: the time at 1 ÷ the time at T (1.0x: each thread as fast as one alone)
    const weak = CASES[id]?.weak;
    const label = r.rows.find((x) => x.id === id).label;
    lines.push(`| ${label}${decode ? '' : ', ms'} | ${Ts.map((_, i) => cell(i)).join(' | ')} | ${weak ? '—' : `${range(best, times)}×`} |`);
    if (perRun.some((at) => at.some((x) => x?.peer))) {
      const peer = (i) => {
        const xs = perRun.map((at) => at[i]).filter((x) => x?.peer);
        return xs.length ? `${range(xs.map((x) => x.peer), (v) => fmt(v))} (${range(xs.map((x) => x.peer / x.ours), (v) => v.toFixed(2))}×)` : '—';
      };
      lines.push(`| onnxruntime-web, ms (its ÷ ours) | ${Ts.map((_, i) => peer(i)).join(' | ')} | |`);
    }
  }
  if (Ts.includes(16)) lines.push('', ...manyCoreTargets(runs, Ts, CASES));
  // What threads: 'auto' did at the most threads: each call takes what its work is worth.
  const top = r.rows.filter((x) => x.threads === Ts[Ts.length - 1] && x.used !== undefined);
  if (top.length) {
    lines.push('', `Threads each call took at T = ${Ts[Ts.length - 1]} (\`favor.threadsUsed()\`): ${top.map((x) => `${x.label.replace(/, tokens\/s$/, '')}: ${x.used}`).join('; ')}.`);
  }
  // The host's share of our threads' time during the calls, per T: what it took no split wins back.
  const stealAt = (rows, T) => {
    const xs = rows.filter((x) => x.threads === T && x.steal);
    const threadMs = xs.reduce((sum, x) => sum + x.steal.threadMs, 0);
    return threadMs ? (xs.reduce((sum, x) => sum + x.steal.ticks, 0) * 10) / threadMs : null;
  };
  if (runs.some((rows) => rows.some((x) => x.steal))) {
    const cells = Ts.map((T) => [T, runs.map((rows) => stealAt(rows, T)).filter((v) => v !== null)]).filter(([, v]) => v.length);
    lines.push('', `The share of our threads' time the host ran something else while they wanted to run (steal, from /proc/stat, over the calls above at each T, each call's time × the threads it took): ${cells.map(([T, v]) => `T = ${T}: ${range(v.map((x) => 100 * x), (x) => x.toFixed(1))}%`).join('; ')}.`);
  }
  // Serial on the calling thread: the output's copy, and the inputs' too in runs made before they
  // arrived while the call ran (web/heap.js call).
  const copies = Object.entries(r.copies ?? {}).map(([id, { inputs, output, pages }]) => {
    const t1 = r.rows.find((x) => x.id === id && x.threads === 1)?.ours, T = Ts[Ts.length - 1];
    const copy = r.inputsArrive ? output : inputs + output;
    const overlapped = pages === undefined ? '' : `, and ${fmt(pages)} ms writing a fresh array's pages while the helpers compute`;
    return t1 ? `${CASES[id].label}: ${fmt(inputs)} ms in and ${fmt(output)} ms out${overlapped} (${r.inputsArrive ? 'the copy out' : 'the copies'} ${((100 * copy) / t1).toFixed(1)}% of its time on one thread; with ${r.inputsArrive ? 'it' : 'them'} serial, at most ${[...new Set([T, 16])].map((n) => `${(t1 / (copy + (t1 - copy) / n)).toFixed(1)}× at T = ${n}`).join(' and ')})` : null;
  }).filter(Boolean);
  if (copies.length) {
    const overlap = r.inputsArrive
      ? "The array of a result without `out` is made, its pages written once (the system maps them in as they are first written), and a large call's inputs are copied in piece by piece, while the helper threads compute (they start on the pieces already in), so that this part overlaps the call's work; the copy out does not"
      : "The array of a result without `out` is made, its pages written once (the system maps them in as they are first written), while the helper threads compute, so that this part overlaps the call's work; the copies do not (this run came before a large call's inputs were copied in while it runs)";
    lines.push('', `What a call does on the calling thread alone, timed by itself: its inputs copied into a shared buffer and its output out into an array whose pages are mapped in already. ${overlap}: ${copies.join('; ')}.`);
  }
  // Each T's wasm memory, which grows as a call needs it and never shrinks: after the last call,
  // and the call that grew it most.
  const grown = Ts.map((T) => {
    const rows = r.rows.filter((x) => x.threads === T && x.heap);
    if (!rows.length) return null;
    let most = null, before = r.heapAtLoad?.[T] ?? 0, by = 0;
    for (const x of rows) {
      if (x.heap - before > by) by = x.heap - before, most = x;
      before = Math.max(before, x.heap);
    }
    return `T = ${T}: ${(before / 2 ** 20).toFixed(0)} MiB${most ? ` (${(by / 2 ** 20).toFixed(0)} of them from ${most.label})` : ''}`;
  }).filter(Boolean);
  if (grown.length)
    lines.push('', `Each T's wasm memory after the calls above (its inputs and outputs pass through it; it grows as a call needs more, and never shrinks), and the call that grew it most: ${grown.join('; ')}.`);
  const wake = Object.entries(r.wake ?? {}).sort((a, b) => a[0] - b[0]);
  if (wake.length) {
    const asleep = r.roused ? 'they have gone to sleep, and the call wakes them before it copies its inputs in' : 'they have gone to sleep; this run came before a call woke them while it copies its inputs in';
    lines.push('', `Waking the helpers: ${CASES.favorMid.label}, with \`out\`, right after the same call (its helpers still spinning) and after 1 ms of nothing (${asleep}), in alternation, median µs: ${wake.map(([T, w]) => `T = ${T}: ${(1000 * w.afterCall).toFixed(0)} and ${(1000 * w.afterIdle).toFixed(0)}`).join('; ')}.`);
  }
  return lines.join('\n');
}
