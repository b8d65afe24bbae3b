#!/usr/bin/env node
// How far the thread bench's calls (bench/lib/thread-cases.mjs) can scale, as their split into
// regions and the pool's way of dealing them out allow, read on any machine, few cores included.
// bench/native/work_span.cpp runs each call natively (the core's SSE4.2 build, the closest to
// wasm's 128-bit SIMD) with every region split as it would be on T threads but run on one, and
// times every index (src/favor/threads/work_span.hpp). From that trace:
// - the pool model (bench/lib/pool-model.mjs): the time on T threads that each run as fast as one
//   alone, the indices dealt out as the pool deals them;
// - Brent's bounds from the call's work and span: at most one-thread time / max(work / T, span),
//   at least one-thread time / ((work - span) / T + span);
// beside the speed-up the same native calls measured on the machine's threads, and where those
// threads' time went (src/favor/threads/timeline.hpp): computing, and how much longer than one thread
// alone, or waiting, and for what.
//
//   node bench/work-span.mjs [--quick] [--out FILE.md]   measure here (with --merge too:
//                          [--note TEXT]                  a sentence on the machine, shown
//                                                        under its heading)
//   node bench/work-span.mjs --merge DIR [--out FILE.md] add DIR/work-span.json and DIR/cpuinfo,
//                                                        written on a lent machine by
//                                                        bench/threads-device.sh run
//   node bench/work-span.mjs --report-only [--out FILE.md] the section from the saved results
//   node bench/work-span.mjs --args                      the driver's arguments for the
//                                                        thread bench's calls (threads-device.sh)
//
// Each machine's results are kept in bench/work-span-results.json under its CPU and core count;
// the section of BENCHMARKS.md (between <!-- work-span --> markers) shows all of them (--out
// elsewhere: that file's section, and the results beside it, the committed ones untouched).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { cpuIdentity } from './lib/cpu-history.mjs';
import { fmtMs } from './lib/format.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';
import { simulatePool } from './lib/pool-model.mjs';
import { CASES } from './lib/thread-cases.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false }, out: { type: 'string' }, merge: { type: 'string' }, args: { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false }, note: { type: 'string' },
  },
});
const reps = args.quick ? 3 : 7;
const PLANS = [1, 2, 4, 8, 12, 16];  // as the thread bench on a 16-core machine
// The pool model is also run with its last helper this much slower than the other threads.
const SLOW = 1.5;
const RESULTS = `${repo}bench/work-span-results.json`;

// Every call of the thread bench with a fixed shape ('the same into out' is the same call natively).
const ids = Object.keys(CASES).filter((id) => CASES[id].H !== 'T' && !CASES[id].out);
const caseArgs = ids.flatMap((id) => {
  const c = CASES[id];
  return ['--case', `${id}:${c.method}:${c.H}:${c.L}:${c.causal ? 1 : 0}:${c.state ?? 'favor'}`];
});
if (args.args) {
  console.log(caseArgs.join(' '));
  process.exit(0);
}

const cpuName = (cpuinfo) => { try { return cpuIdentity(cpuinfo).name; } catch { return 'unknown CPU'; } };
const date = new Date().toISOString().slice(0, 10);

// One machine's run of the driver, as kept in the results file.
function machine(run, cpu, when) {
  const rows = run.cases.map((c) => {
    const one = c.plans.find((p) => p.threads === 1).work;
    return {
      id: c.id, one,
      plans: c.plans.map(({ threads: T, work, span, trace }) => ({
        threads: T, work, span, model: Math.min(T, one / simulatePool(trace, T)),
        ...(T > 1 && { slow: Math.min(T, one / simulatePool(trace, T, { speed: Object.assign([], { [T - 1]: SLOW }) })) }),
        least: Math.min(T, one / ((work - span) / T + span)), most: Math.min(T, one / Math.max(work / T, span)),
      })),
      measured: Object.fromEntries(c.timed.filter((t) => t.threads > 1).map((t) => [t.threads, t.speedup])),
      // Where the threads' time went in the median timed call at each T (drivers since this was
      // recorded), and the one-thread call's time.
      oneTimed: c.timed.find((t) => t.threads === 1)?.seconds,
      spent: Object.fromEntries(c.timed.filter((t) => t.threads > 1 && t.spent).map((t) => [t.threads, { seconds: t.seconds, regions: t.regions, ...t.spent }])),
    };
  });
  return { cpu, cores: run.cores, date: when, reps: run.reps, steps: run.steps, warmed: run.warmed ?? false, least: run.least ?? false, rows, ...(run.together && { together: run.together }) };
}

let measured = null;
if (args['report-only']) {
  // the section rewritten from the saved results, nothing measured
} else if (args.merge) {
  if (!existsSync(`${args.merge}/work-span.json`)) {
    console.error(`work-span: ${args.merge}/work-span.json not found (bench/threads-device.sh run writes it into $OUT)`);
    process.exit(1);
  }
  const run = JSON.parse(readFileSync(`${args.merge}/work-span.json`, 'utf8'));
  // The cores under load, measured apart on the lent machine (work_span --together).
  if (existsSync(`${args.merge}/together.json`)) run.together = JSON.parse(readFileSync(`${args.merge}/together.json`, 'utf8')).together;
  const cpuinfo = existsSync(`${args.merge}/cpuinfo`) ? readFileSync(`${args.merge}/cpuinfo`, 'utf8') : '';
  measured = machine(run, cpuName(cpuinfo), run.date ?? date);
} else {
  // The native driver, built as bench/run.sh builds it (a no-op when it is up to date).
  const dir = `${repo}build/bench-native-sse`;
  const sh = (command, argv) => {
    const r = spawnSync(command, argv, { cwd: repo, encoding: 'utf8', maxBuffer: 1 << 24 });
    if (r.status !== 0) throw new Error(`${command} ${argv.join(' ')} failed:\n${(r.stderr || r.stdout || String(r.error)).slice(-2000)}`);
    return r.stdout;
  };
  if (!existsSync(`${dir}/CMakeCache.txt`)) sh('cmake', ['-S', 'bench/native', '-B', dir, '-DCMAKE_BUILD_TYPE=Release', '-DCMAKE_CXX_FLAGS=-msse4.2 -mno-avx']);
  sh('cmake', ['--build', dir, '-j2', '--target', 'work_span']);
  const cores = availableParallelism();
  const together = [...new Set([...PLANS.filter((T) => T > 1 && T <= cores), cores])].filter((T) => T > 1);
  const run = JSON.parse(sh(`${dir}/work_span`, ['--reps', String(reps), '--threads', PLANS.join(','), ...caseArgs,
    ...(together.length ? ['--together', together.join(',')] : [])]));
  let cpuinfo = '';
  try { cpuinfo = readFileSync('/proc/cpuinfo', 'utf8'); } catch { /* the name stays unknown */ }
  measured = machine(run, cpuName(cpuinfo), date);
}
if (measured && args.note) measured.note = args.note;

const key = (m) => `${m.cpu} (${m.cores} cores)`;
const saved = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : { machines: [] };
const machines = [...(saved.machines ?? []).filter((m) => !measured || key(m) !== key(measured)), ...(measured ? [measured] : [])]
  .sort((a, b) => b.cores - a.cores);

const x = (r) => `${r.toFixed(1)}×`;
const label = (id) => (CASES[id]?.label ?? id).replace(', tokens/s', '');
const md = [];
md.push('<!-- work-span -->', '## What the split allows: the pool model, work and span', '');
md.push('`node bench/work-span.mjs` (part of `npm run bench`). How far the thread bench\'s calls can scale as their split into regions and the pool\'s way of dealing it out allow, read from one thread: ' +
  'each call runs natively (the core built with `-O3 -msse4.2 -mno-avx`, the closest to wasm\'s 128-bit SIMD; the same inputs, d = dv = 64, FAVOR+ m = 256 positive orthogonal; ' +
  'glibc\'s allocator kept from mapping large blocks anew at each call, as wasm\'s never does) with every region split as it would be on T threads but its indices run one after another on one thread, each timed (src/favor/threads/work_span.hpp), ' +
  `${[...new Set(machines.map((m) => m.reps))].join(' or ')} runs of each split, every serial stretch and index kept at its least time over them (a step the host preempted then slows one run of that step, not the whole trace: over five runs of the same calls on a shared 2-vCPU host, the model's speed-up at a given T spread by up to 1.8× with each split's fastest whole run kept, and by up to 1.4× with each step at its least). Decode is 400 appends of one position after the prefill.`);
md.push('');
md.push('- **The pool model** (bench/lib/pool-model.mjs) replays the trace on T threads as src/favor/threads/pool.cpp deals the indices out (home ranges first, then the others\' ranges; a region inside an index published for the threads that have none left; its thread waiting for the indices taken), each thread as fast as one alone and every hand-off free. ' +
  'The speed-up over one thread it gives is what the split allows; in parentheses, where the machine has the threads, the same native call timed on T threads (the median ratio of rounds that time one thread and T in turn; as in the thread bench, a call under 10 ms on one thread is made once untimed right before each timed one on more, so that its helpers, asleep since the count before, are awake). ' +
  'A measured speed-up below the model\'s comes from the machine: threads slower together than alone (clocks, caches, memory, a shared host: the thread bench\'s weak-scaling rows), wake-ups and hand-offs. The wasm calls of the thread bench also copy their inputs and output on the calling thread, which this leaves out.');
md.push('- **Brent\'s bounds**, from the call\'s *work* (the time on one thread at T\'s split) and *span* (its longest chain of steps that run in order: the time outside regions plus, in each region, its longest index, recursively): at least one-thread time ÷ ((work − span) ÷ T + span), what any scheduler that leaves no thread idle while an index waits reaches, and at most one-thread time ÷ max(work ÷ T, span). All figures at most T.');
for (const m of machines) {
  const Ts = [...new Set([...m.rows[0].plans.map((p) => p.threads), ...Object.keys(m.rows[0].measured).map(Number)])].filter((T) => T > 1).sort((a, b) => a - b);
  const table = (title, cell) => {
    md.push('', title, '');
    md.push(`| call | one thread | ${Ts.map((T) => `T = ${T}`).join(' | ')} |`);
    md.push(`|---|---:|${Ts.map(() => '---:|').join('')}`);
    for (const r of m.rows) {
      const one = CASES[r.id]?.method === 'decode' ? `${(m.steps / r.one / 1000).toFixed(1)}k tokens/s` : `${fmtMs(r.one * 1000)} ms`;
      md.push(`| ${label(r.id)} | ${one} | ${Ts.map((T) => cell(r, T, r.plans.find((q) => q.threads === T)) || '—').join(' | ')} |`);
    }
  };
  md.push('', `### ${m.cpu}, ${m.cores} cores (${m.date})`);
  if (m.note) md.push('', m.note);
  if (!m.least) md.push('', 'Its traces are each split\'s fastest whole run (this run came before each step was kept at its least time over the runs).');
  if (!m.warmed) md.push('', 'Its native timings came before a short call was made once untimed right before each timed one: on more than one thread, each such call began with its helpers asleep.');
  table('The pool model (in parentheses: measured natively):', (r, T, p) => [p?.model ? x(p.model) : '', r.measured[T] ? `(${x(r.measured[T])})` : ''].filter(Boolean).join(' '));
  if (m.rows.some((r) => r.plans.some((p) => p.slow))) {
    table(`The pool model with its last helper ${SLOW}× slower than the other threads (on a core the host shares, say): a region that gives each thread one or two pieces waits for that thread's last one, while in one cut finer the others take over the pieces it has not begun:`,
      (r, T, p) => (p?.slow ? x(p.slow) : ''));
  }
  table('Brent\'s bounds:', (r, T, p) => (p ? `${x(p.least)}–${x(p.most)}` : ''));
  // What a split costs beyond the work itself (pieces that compute rows they drop, states kept
  // for a later pass, blocks of features) shows here first.
  table('The work of T\'s split ÷ the work of one thread\'s (1.00× where splitting costs nothing; the timings vary by about 2%, more on a busy host, where a split timed while the host was slow reads high at its T alone):',
    (r, T, p) => (p ? `${(p.work / r.one).toFixed(2)}×` : ''));
  const spentTs = [...new Set(m.rows.flatMap((r) => Object.keys(r.spent ?? {}).map(Number)))].sort((a, b) => a - b);
  for (const T of spentTs.filter((t) => t === spentTs[spentTs.length - 1] || (t === 8 && spentTs.includes(16)))) {
    const speeds = m.rows.some((r) => r.spent?.[T]?.slowestIndex !== undefined);
    md.push('', `Where the threads' time went, measured natively on ${T} threads (the median of the timed calls; shares of ${T} × its time; "work grown": the time the threads computed, the calling thread's serial stretches included, ÷ one thread's time for the whole call, 1.0× where each thread computes as fast as one alone; the speed-up is ${T} × busy ÷ work grown` +
      (speeds ? '; "slowest thread" and "caller": in the regions where two threads or more ran indices and none helped with a region inside an index (as threads do with the rows of heads fewer than the threads: an index\'s time there holds its helpers\' share), weighted by their length, a thread\'s mean index time ÷ the median thread\'s, for the slowest thread and for the calling thread, 1.00 where every thread ran its indices alike (a region\'s pieces are cut alike), "—" where no region is left' : '') + '):', '');
    md.push(`| call | time | speed-up | busy | work grown | the caller alone: the others idle | waiting for a first index | between indices | after the last index | not invited |${speeds ? ' slowest thread | caller |' : ''}`);
    md.push(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|${speeds ? '---:|---:|' : ''}`);
    const ratio = (v) => (v > 0 ? v.toFixed(2) : '—');
    const pct = (v, wall) => `${((100 * v) / (T * wall)).toFixed(0)}%`;
    for (const r of m.rows) {
      const s = r.spent?.[T];
      if (!s || !r.oneTimed) continue;
      const busy = s.work + s.serial, decode = CASES[r.id]?.method === 'decode';
      const time = decode ? `${(m.steps / s.seconds / 1000).toFixed(1)}k tokens/s` : `${fmtMs(s.seconds * 1000)} ms`;
      md.push(`| ${label(r.id)} | ${time} | ${x(r.oneTimed / s.seconds)} | ${pct(busy, s.seconds)} | ${(busy / r.oneTimed).toFixed(2)}× | ${pct(s.alone, s.seconds)} | ${pct(s.start, s.seconds)} | ${pct(s.between, s.seconds)} | ${pct(s.end, s.seconds)} | ${pct(s.uninvited, s.seconds)} |${speeds ? ` ${ratio(s.slowestIndex)} | ${ratio(s.callerIndex)} |` : ''}`);
    }
  }
  if (m.together?.length) {
    const loop = (t, mean, slowest) => `${t[mean].toFixed(2)} on average, the slowest thread ${t[slowest].toFixed(2)} (as "work grown": ${(1 / t[mean]).toFixed(2)}×)`;
    const streaming = m.together.some((t) => t.streaming !== undefined), steal = m.together.some((t) => t.steal !== undefined);
    md.push('', `The cores under load, apart from any call: each of T threads at once, started together, its speed ÷ one thread's alone, the median of ${m.together[0].rounds ?? 7} rounds that run one thread and T in turn. ` +
      `The register-only multiply-add loop of bench/native/peak_kernel.cpp (no memory traffic): ${m.together.map((t) => `T = ${t.threads}: ${loop(t, 'perThread', 'slowest')}`).join('; ')}. ` +
      (streaming ? `A loop that reads its own 8 MiB over and over, a multiply-add per 4 floats (4× a server core's L2, so each pass comes from the shared cache or memory, as a large call's inputs do): ${m.together.filter((t) => t.streaming !== undefined).map((t) => `T = ${t.threads}: ${loop(t, 'streaming', 'streamingSlowest')}`).join('; ')}. ` : '') +
      (steal ? `The share of the T threads' time the host ran something else while they wanted to run (steal, /proc/stat), over both loops: ${m.together.filter((t) => t.steal !== undefined).map((t) => `T = ${t.threads}: ${(100 * t.steal).toFixed(1)}%`).join('; ')}. ` : '') +
      'What a thread loses in the register loop (all-core clocks, a host that shares its cores) no split of a call wins back; what it loses beyond that in the streaming loop, the shared cache and memory cost it; a call\'s work grown beyond both comes from what the call itself moves, or from hand-offs.');
  }
  const at16 = m.rows.map((r) => ({ r, p: r.plans.find((p) => p.threads === 16) })).filter(({ p }) => p);
  if (at16.length) {
    md.push('', `Span at T = 16, and the work it leaves each thread (work ÷ 16), ms: ${at16.map(({ r, p }) => `${label(r.id)}: ${fmtMs(p.span * 1000)} and ${fmtMs(p.work / 16 * 1000)}`).join('; ')}.`);
  }
}
md.push('<!-- /work-span -->');
const section = md.join('\n');
console.log(section);
writeSection(args.out ?? `${repo}BENCHMARKS.md`, 'work-span', section);
writeFileSync(resultsFileFor(args.out, 'work-span-results.json'), `${JSON.stringify({ machines }, null, 1)}\n`);
