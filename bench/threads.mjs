// Thread scaling: the same calls at T = 1, 2, 4, … up to the machine's cores (and 12 where the
// machine has 16), each T a loadFavor({ threads: T }) of the relaxed-SIMD build, all loaded at
// once and called in turn, d = dv = 64, m = 256 (positive, orthogonal), with onnxruntime-web's
// graphs at env.wasm.numThreads = T in the same rounds where its files are found. Prints a table
// and writes JSON (--json FILE).
//
//   node bench/threads.mjs [--threads 1,2,4,8,16] [--cases favor8,exact8,...] [--reps 5] [--quick]
//                          [--json FILE] [--no-peers] [--out BENCHMARKS.md] [--merge FILE.json]
//
// Each machine's results are kept in bench/threads-results.json under its CPU and core count;
// --out writes the section of BENCHMARKS.md (between <!-- threads --> markers) from all of them
// (--out elsewhere: that file's section, and the results beside it, the committed ones untouched).
// --merge adds a results file written elsewhere (--json on a machine with many cores, from the
// folder bench/threads-bundle.sh packs) without measuring here; several runs of one machine
// (--merge A.json,B.json) show as ranges.
//
// It imports only web/node.js, dist/, bench/lib/thread-{cases,rounds,table,targets}.mjs,
// bench/lib/cpu-history.mjs and (for the peer) bench/lib/ort-peer.mjs, onnxruntime-web and
// bench/onnx/, so the folder that `bash bench/threads-bundle.sh` packs runs it as is with a Node
// binary and no network.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

import { loadFavor } from '../web/node.js';
import { thisCpuName } from './lib/cpu-history.mjs';
import { peerCase, startPeer } from './lib/ort-peer.mjs';
import { CASES, D as d, DV as dv, FEATURES as m, caseCall, qkv, stateOptions, tensor } from './lib/thread-cases.mjs';
import { MORE_ROUNDS, ROUNDS_MS, SHORT_MS, WARMUP_MS, kept, median, timeInRounds, warmUpSteps } from './lib/thread-rounds.mjs';
import { machineTable, toJson } from './lib/thread-table.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
  if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : true]);
  return pairs;
}, []));
const cores = availableParallelism();
const threadCounts = args.threads
  ? String(args.threads).split(',').map(Number)
  : [1, 2, 4, 8, 12, 16, 24, 32, 48, 64].filter((t) => t <= cores);
const reps = Number(args.reps ?? (args.quick ? 3 : 5));

const caseIds = args.cases ? String(args.cases).split(',') : Object.keys(CASES);
for (const id of caseIds) if (!CASES[id]) throw new RangeError(`--cases: no case '${id}' (the cases: ${Object.keys(CASES).join(', ')})`);

// Warm-up, at least 3 calls and 500 ms: first-call allocations, the heap's growth, and the
// engine's optimizing compile of the code each thread runs, in the background (in a fresh
// pthreads build, the first calls of a small size took 2-5x as long as the later ones, and a
// one-head FAVOR+ call at L = 4096 took up to 1.8x for its first 300 ms). Returns the mean time
// of a call, ms.
function warmUp(call) {
  const t0 = performance.now();
  let n = 0;
  for (; n < 3 || performance.now() - t0 < WARMUP_MS; ++n) call();
  return (performance.now() - t0) / n;
}

function timeCall(call) {
  warmUp(call);
  const times = [];
  for (let r = 0; r < reps; ++r) {
    const t0 = performance.now();
    call();
    times.push(performance.now() - t0);
  }
  return median(times);
}

// The time the host ran something else while this guest's CPUs wanted to run (steal, the 8th
// figure of /proc/stat's first line, all CPUs together, in ticks of 10 ms); null where the
// system does not say. Summed over many calls, the share of our threads' time the host took.
function stealTicks() {
  try {
    const figures = readFileSync('/proc/stat', 'latin1').slice(0, 200).split('\n')[0].trim().split(/\s+/);
    return figures[0] === 'cpu' && figures.length > 8 ? Number(figures[8]) : null;
  } catch {
    return null;
  }
}

// Case `c` on every module at once, and on onnxruntime-web at every T where it has the case
// (`peers`, by T: bench/lib/ort-peer.mjs): each call warmed up, then `reps` rounds or more
// (roundsFor) that call every module and every peer in turn, the order rotating from round to
// round, so that a host whose speed drifts (a shared machine: runs of the same build differed by
// 15-40% on a lent one) moves every T and both libraries alike, and the speed-ups and the ratios
// to the peer compare calls made within the same seconds. A call under SHORT_MS is made once
// untimed right before its timed one: the call before it has just filled the caches with its own
// data (bench/lib/thread-rounds.mjs). Returns, per module, { ours: median ms, samples: each
// round's ms, used: threads it took, heap: the module's wasm memory after the case, in bytes,
// peer: the peer's median ms or null, peerSamples }.
async function runCase(modules, peers, c) {
  const inputs = new Map();  // by head count: the modules share one set of arrays
  const calls = modules.map(({ favor, featureMap, T }) => {
    const H = c.H === 'T' ? T : c.H;
    if (!inputs.has(H)) inputs.set(H, qkv(H, c.L));
    return caseCall(favor, featureMap, c, inputs.get(H), H);
  });
  // One entry per call to time: ours at every T, then the peer at every T that has the case.
  const entries = modules.map(({ favor }, i) => {
    favor.threadsUsed();
    const ms = warmUp(calls[i]);
    const used = favor.threadsUsed(), steal = { ticks: 0, threadMs: 0 };
    return { ms, used, steal, time: (twice) => {
      const s0 = stealTicks(), start = performance.now();
      if (twice) calls[i]();
      const t0 = performance.now();
      calls[i]();
      const end = performance.now(), s1 = stealTicks();
      if (s0 !== null && s1 !== null) {
        steal.ticks += s1 - s0;
        steal.threadMs += used * (end - start);
      }
      return end - t0;
    } };
  });
  const peerAt = new Map();
  if (peerCase(c)) {
    for (const { T } of modules) {
      const peer = peers.get(T);
      if (!peer) continue;
      try {
        const ms = await peer.open(c);
        peerAt.set(T, entries.length);
        // A peer that fails in the rounds (its process gone) leaves its cell without a figure.
        let failed = false;
        entries.push({ ms, time: (twice) => peer.run({ twice }).catch((e) => {
          if (!failed) console.log(e.message);
          failed = true;
          return NaN;
        }) });
      } catch (e) {
        console.log(e.message);
      }
    }
  }
  const times = await timeInRounds(entries, reps);
  return modules.map(({ T }, i) => {
    const p = peerAt.get(T);
    const peerTimes = p === undefined ? [] : times[p].filter(Number.isFinite);
    const { steal } = entries[i];
    return { ours: median(times[i]), samples: kept(times[i]), used: entries[i].used, heap: modules[i].favor.memory().heapBytes, ...(steal.threadMs && { steal }),
      peer: peerTimes.length ? median(peerTimes) : null, ...(peerTimes.length && { peerSamples: kept(peerTimes) }) };
  });
}

// What each call of case `c` does on the calling thread alone, as web/heap.js does at every call:
// copy its inputs into a shared buffer (the wasm heap's share of them), and its output out into
// an array whose pages are already mapped in. The array of a result without `out` is made while
// the helper threads compute (bindings/wasm/heap.cpp prepare_result_array): writing a fresh array's pages,
// which the system maps in as they are first written (`pages`), overlaps the call's work, as does
// copying a large call's inputs in (they arrive piece by piece while the helpers start on them).
// The copy out no thread can share: with it serial, T threads speed a call whose one-thread time
// is t1 up by at most t1 / (copy + (t1 - copy) / T).
function timeCopies(c) {
  const H = c.H, n = H * c.L * d, heap = new Float32Array(new SharedArrayBuffer(4 * 4 * n));
  const inputs = qkv(H, c.L);
  const freshPages = () => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i += 1024) a[i] = 0;
    return a;
  };
  const result = freshPages();
  return {
    inputs: timeCall(() => inputs.forEach((t, i) => heap.set(t.data, i * n))),
    output: timeCall(() => result.set(heap.subarray(3 * n, 4 * n))),
    pages: timeCall(freshPages),
  };
}

// What waking the helpers costs a call: FAVOR+ of one head at L = 1024 with `out`, timed right
// after the same call (its helpers still spinning) and after 1 ms of nothing (they have gone to
// sleep: a helper sleeps after ~100 us without a job), in alternation. The call wakes its
// sleeping helpers before it copies its inputs in (src/favor/threads/rouse.hpp), and they join as they
// wake; the difference of the medians is what waking still costs at T threads (a call that takes
// T threads after an idle moment pays it).
function timeWake(favor, featureMap) {
  const { L } = CASES.favorMid;
  const [q, k, v] = qkv(1, L), out = new Float32Array(L * dv);
  const call = () => favor.favorAttention(q, k, v, { featureMap, out });
  warmUp(call);
  const after = { call: [], idle: [] };
  for (let r = 0; r < 200; ++r) {
    const idle = r % 2 === 1;
    if (idle) for (const t = performance.now(); performance.now() - t < 1;);
    else call();
    const t0 = performance.now();
    call();
    after[idle ? 'idle' : 'call'].push(performance.now() - t0);
  }
  return { afterCall: median(after.call), afterIdle: median(after.idle) };
}

// Decode: a prefill of L positions, then bursts of 400 appends of one position, in tokens per
// second, `reps` rounds (not more: an exact cache grows with every burst, and 45 rounds took its
// rate from 38k to 12k tokens/s). Every T's state at once, the bursts of a round in turn (the order rotating), so that a
// machine whose speed drifts (a shared host) moves every T alike. Each decoder's rate, and the
// threads its steps took (in the warm-up), are set on it.
function measureDecoders(decoders) {
  for (const s of decoders) {
    s.x = tensor([s.H, 1, d], 4);
    warmUpSteps(s.favor, s.options, s.x, WARMUP_MS);
    s.favor.threadsUsed();
    for (let n = 0; n < 200; ++n) s.state.append(s.x, s.x, s.x);
    s.used = s.favor.threadsUsed();
  }
  const rates = decoders.map(() => []);
  for (let r = 0; r < reps; ++r) {
    for (let j = 0; j < decoders.length; ++j) {
      const i = (j + r) % decoders.length, s = decoders[i];
      const steps = 400, t0 = performance.now();
      for (let n = 0; n < steps; ++n) s.state.append(s.x, s.x, s.x);
      rates[i].push(steps / ((performance.now() - t0) / 1000));
    }
  }
  decoders.forEach((s, i) => { s.rate = median(rates[i]); s.samples = kept(rates[i]); });
}

const RESULTS = new URL('./threads-results.json', import.meta.url);

async function measure() {
  const results = { cpu: thisCpuName(), cores, node: process.version, date: new Date().toISOString().slice(0, 10), reps, interleaved: true, inputsArrive: true, roused: true, peerInterleaved: true, rows: [] };
  console.log(`# thread scaling on ${results.cpu} (${cores} cores), Node ${process.version}`);
  const save = () => { if (args.json) writeFileSync(String(args.json), toJson({ ...results, partial: true })); };
  const report = (row) => {
    results.rows.push(row);
    save();
    const decode = CASES[row.id].method === 'decode';
    console.log(`T=${String(row.threads).padStart(2)}  ${row.label.padEnd(44)} ${decode ? `${(row.ours / 1000).toFixed(1)}k tok/s` : `${row.ours.toFixed(1)} ms`}  (took ${row.used})${row.peer ? `   ort ${row.peer.toFixed(1)} ms` : ''}`);
  };
  // Every T's module at once (each keeps its helper threads asleep while another T runs).
  const modules = [];
  for (const T of threadCounts) {
    const favor = await loadFavor({ threads: T });
    modules.push({ T, favor, featureMap: favor.createFeatureMap({ dim: d, features: m, seed: 7 }) });
  }
  results.heapAtLoad = Object.fromEntries(modules.map(({ T, favor }) => [T, favor.memory().heapBytes]));
  // onnxruntime-web, a process per T kept for the whole run, its calls in the same rounds as ours.
  const peers = new Map();
  if (!args['no-peers']) {
    for (const T of threadCounts) {
      const peer = await startPeer(T, { warmupMs: WARMUP_MS });
      if (peer) peers.set(T, peer);
    }
  }
  for (const id of caseIds.filter((i) => CASES[i].method !== 'decode')) {
    const c = CASES[id];
    (await runCase(modules, peers, c)).forEach(({ ours, samples, used, heap, steal, peer, peerSamples }, i) => {
      const { T } = modules[i];
      report({ id, label: c.label, threads: T, ours, samples, used, heap, ...(steal && { steal }), peer, ...(peerSamples && { peerSamples }) });
    });
  }
  for (const peer of peers.values()) peer.close();
  save();
  if (!args.cases) {
    results.wake = {};
    for (const { T, favor, featureMap } of modules) results.wake[T] = timeWake(favor, featureMap);
  }
  const decoders = [];
  for (const id of caseIds.filter((i) => CASES[i].method === 'decode')) {
    for (const { T, favor, featureMap } of modules) {
      const c = CASES[id], options = stateOptions(c, featureMap);
      const state = favor.createCausalState(options);
      state.append(...qkv(c.H, c.L));
      decoders.push({ id, T, H: c.H, favor, options, state });
    }
  }
  results.copies = {};
  for (const id of caseIds.filter((i) => ['favor8long', 'favor1long'].includes(i))) results.copies[id] = timeCopies(CASES[id]);
  measureDecoders(decoders);
  for (const s of decoders) {
    report({ id: s.id, label: CASES[s.id].label, threads: s.T, ours: s.rate, samples: s.samples, used: s.used, peer: null });
    s.state.dispose();
  }
  for (const { favor, featureMap } of modules) {
    featureMap.dispose();
    favor.dispose();
  }
  return results;
}

function section(all) {
  const machines = Object.values(all).sort((a, b) => b.cores - a.cores);
  return ['<!-- threads -->', '## Thread scaling', '',
    `\`node bench/threads.mjs\` (part of \`npm run bench\`): the same calls at T = 1, 2, 4, … threads, each T a \`loadFavor({ threads: T })\` of the relaxed-SIMD build in Node, d = dv = 64, FAVOR+ m = 256 (positive, orthogonal), median of ${[...new Set(machines.map((r) => r.reps ?? reps))].join(' or ')} calls after a warm-up (at least 3 calls and ${WARMUP_MS} ms; a machine's note says where its run differed), and of more where they take little time: as many rounds as fit in ${ROUNDS_MS / 1000} s of timed calls, up to ${MORE_ROUNDS}× as many (ours and onnxruntime-web's alike; bench/threads-results.json keeps each cell's calls, round by round; a machine's table says where its runs came before this). Every T's module is loaded at once and each call is made on every T in turn, in rounds that rotate the order, so that a host whose speed drifts moves every T alike (a call under ${SHORT_MS} ms is made once untimed right before its timed one, as the module before it has filled the caches with its own data); a machine's note says where its run measured one T after another; decode is bursts of 400 appends of one position after a 1,024-position prefill (FAVOR+ state or exact KV cache) and 200 appends, every T's state in each round in turn, in tokens per second, each module's steps first warmed up for ${WARMUP_MS} ms on a state of its own (V8 compiles a wasm function with its optimizing tier only after it has run a while). In parentheses: the speed-up over one thread. The rows "T heads on T threads" scale the work with the threads (weak scaling): there the ratio is the time on one thread ÷ the time on T, 1.0× when each thread works as fast as one alone, and below it when threads slow each other (clocks, caches, memory, locks, or a host that shares the cores), a limit no split of the work can win back. onnxruntime-web runs its one-head graphs (bench/onnx) at \`env.wasm.numThreads = T\`, each T in a process of its own kept for the whole run, with the same warm-up, its calls in the same rounds as ours (bench/lib/ort-peer.mjs): each timed inside its process, and the next call made once that process's threads have stopped spinning (onnxruntime-web keeps about one core busy for tens of ms after a run), this thread busy meanwhile as between two calls of ours; a machine's table says where its run measured it one T after another instead. Machines with many cores run the folder \`bash bench/threads-bundle.sh\` packs (the built package, this script, the peer's files) with a Node binary (\`bash bench/threads-device.sh\` packs both for a lent machine and runs them there), and their results are merged here with \`--merge\`.`,
    '', ...machines.flatMap((r) => [machineTable(r, { reps }), '']), '<!-- /threads -->'].join('\n');
}

const all = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : {};
const key = (r) => `${r.cpu} (${r.cores} cores)`;
if (args.merge) {
  // One run, or several of one machine (A.json,B.json): the first's rows, the others' beside them.
  const [r, ...others] = String(args.merge).split(',').map((f) => JSON.parse(readFileSync(f, 'utf8')));
  for (const o of others) {
    if (key(o) !== key(r)) throw new Error(`--merge: ${key(o)} is not ${key(r)}`);
    (r.runs ??= []).push(o.rows);
  }
  all[key(r)] = r;
} else {
  const r = await measure();
  if (args.json) writeFileSync(String(args.json), toJson(r));
  if (!args.json || args.out) all[key(r)] = r;
}
if (args.out || args.merge) {
  // (imported here: the folder bench/threads-bundle.sh packs measures with --json alone)
  const { resultsFileFor, writeSection } = await import('./lib/sections.mjs');
  writeFileSync(resultsFileFor(args.out, 'threads-results.json'), toJson(all));
  if (args.out) writeSection(String(args.out), 'threads', section(all));
}
