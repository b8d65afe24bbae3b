#!/usr/bin/env node
// `npm run bench`: favor-attention's wasm builds, its native builds (SSE-only and -march=native),
// onnxruntime-web (wasm, 1 thread: our graphs and its fused MultiHeadAttention op), TensorFlow.js
// (wasm backend, SIMD, 1 thread) and ruvector-attention-wasm, side by side in one run, on exact
// attention and FAVOR+ (positive, m = 256), bidirectional and causal, d = 64, L = 256 ... 65536.
// Every implementation's output is checked against ours on the same inputs and projection W
// before it is timed. Then the crossovers (the smallest L from which our FAVOR+ beats our exact
// attention, m = 64, 128, 256); then bench/decode.mjs, bench/window-decode.mjs, bench/worker.mjs, bench/packed.mjs, bench/feature-maps.mjs, bench/threads.mjs, bench/threads-browser.mjs, bench/work-span.mjs, bench/node-peers.mjs and bench/browser-peers.mjs (Chromium, Firefox) add their sections.
// Writes BENCHMARKS.md, bench/plots/*.svg and bench/results.json
// (with --quick: build/bench-quick/; with --out FILE: beside FILE).
//
//   node bench/run.mjs [--quick] [--out FILE.md] [--max-call-ms 5000] [--budget-ms N]
//                      [--no-native] [--no-peers] [--no-scale] [--scale] [--scale-L N] [--sizes 256,1024]
//                      [--no-crossover] [--crossover-features 64,128,256] [--methods ours2,ort,...]
//                      [--report-only]   (rewrite the report from the saved results.json)
// (bench/run.sh, which `npm run bench` runs, first builds the wasm and native binaries.)
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { wasmCeiling } from './lib/ceiling.mjs';
import { measureRatio, searchCrossover } from './lib/crossover.mjs';
import { difference, flops, gaussian, median } from './lib/inputs.mjs';
import { native, onnxruntime, onnxruntimeMha, oursWasm, tfjs } from './lib/methods.mjs';
import { writeReport } from './lib/report.mjs';
import { isCommittedReport, readSections, resultsFileFor, writeSection } from './lib/sections.mjs';
import { cpuIdentity } from './lib/cpu-history.mjs';
import { ruvector } from './lib/ruvector.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    'max-call-ms': { type: 'string', default: '5000' },
    'budget-ms': { type: 'string' },
    sizes: { type: 'string' },
    'no-native': { type: 'boolean', default: false },
    'no-peers': { type: 'boolean', default: false },
    'no-scale': { type: 'boolean', default: false },
    scale: { type: 'boolean', default: false },
    'scale-L': { type: 'string', default: '1048576' },  // smaller: to try the scale plumbing quickly
    'no-crossover': { type: 'boolean', default: false },
    methods: { type: 'string' },  // only these ids (ours is always run: it is the reference)
    'crossover-features': { type: 'string', default: '64,128,256' },
    'report-only': { type: 'boolean', default: false },
  },
});

const quick = args.quick;
const config = {
  d: 64, dv: 64, m: 256, sigma: 0.5, seed: 42,
  sizes: args.sizes ? args.sizes.split(',').map(Number)
    : quick ? [256, 1024, 4096] : [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536],
  maxCallMs: Number(args['max-call-ms']),
  budgetMs: Number(args['budget-ms'] ?? (quick ? 1500 : 10000)),  // per size and kernel, all implementations together
  minReps: quick ? 3 : 5,
  maxReps: quick ? 7 : 25,
  tolerance: 1e-3,  // relative Frobenius and max-abs (relative to max |ref|) difference to ours
  scale: args.scale || (!quick && !args['no-scale']),
  scaleL: Number(args['scale-L']),
  scaleRuns: [['scale.mjs', 1], ['scale.mjs', 2], ['scale-browser.mjs', 1], ['scale-browser.mjs', 2]],
  scaleMaxHeapMiB: 1536,  // the target: peak wasm heap under 1.5 GB
  crossover: args['no-crossover'] ? null : {
    features: args['crossover-features'].split(',').map(Number),
    grid: [64, 128, 256, 512, 1024, 2048, 4096, 8192],
    step: 32,          // the bisection's resolution in L
    enough: 1.5,       // the grid stops once FAVOR+ is this much faster
    budgetMs: quick ? 300 : 1500,  // per probe (both kernels)
    minRounds: quick ? 5 : 9,
  },
  ceilingAt: 4096,  // the L of the fraction-of-the-ceiling table
};
// The committed report: BENCHMARKS.md, bench/plots/, bench/results.json. Any other report
// (--quick, --out) keeps its plots and results beside itself.
const outFile = path.resolve(args.out ?? (quick ? path.join(repo, 'build/bench-quick/BENCHMARKS.md') : path.join(repo, 'BENCHMARKS.md')));
const committed = isCommittedReport(outFile);
const plotDir = resultsFileFor(outFile, 'plots'), resultsFile = resultsFileFor(outFile, 'results.json');
// The targets on every CPU the committed report has run on: this run's entry is written there only
// for the committed report (other reports show it beside the committed entries).
const history = { file: path.join(repo, 'bench/targets-by-cpu.json'), write: committed };
// --report-only: rewrite the report and plots from the saved results (after changing the report code).
// The decode and grouped-heads section (bench/decode.mjs), the sliding windows' (bench/window-decode.mjs), the worker section (bench/worker.mjs)
// the packed-weights section (bench/packed.mjs), the feature maps' section (bench/feature-maps.mjs) and the peers sections (bench/node-peers.mjs, bench/browser-peers.mjs in Chromium and Firefox) live in the same file between
// markers: a rewrite of the report keeps them.
function keepOwnSections(write) {
  const old = readSections(outFile);
  write();
  for (const [name, section] of old) writeSection(outFile, name, section);
}
if (args['report-only']) {
  const saved = JSON.parse(readFileSync(resultsFile, 'utf8'));
  keepOwnSections(() => writeReport(saved, { outFile, plotDir, resultsFile, history }));
  console.log(`rewrote ${path.relative(process.cwd(), outFile)} and ${path.relative(process.cwd(), plotDir)}/*.svg from ${path.relative(process.cwd(), resultsFile)}`);
  process.exit(0);
}
const tmpDir = path.join(repo, 'build/bench-tmp');
mkdirSync(tmpDir, { recursive: true });

const log = (...a) => console.log(...a);
const started = new Date();
const loadStart = os.loadavg();
const wallStart = performance.now();

// --- Methods -----------------------------------------------------------------------------
// Our wasm builds through the public API, one entry per build: the first is the reference every
// peer is compared with. ceiling: which measured ceiling (below) its GFLOP/s are read against
// (times its threads); crossover: the crossover search runs on it; skip: why not to run it
// with the instance it got (or null).
// 'ours' is the build loadFavor() picks by default: the relaxed-SIMD one in an engine that runs
// relaxed SIMD (bench/run.sh runs this under Node 26), whose plain SIMD twin is then a row too.
const OURS = [
  { id: 'ours', label: 'favor-attention (wasm)', short: 'ours wasm', options: { threads: 1 }, crossover: true },
  { id: 'plain', label: 'favor-attention (wasm, plain SIMD)', short: 'ours plain SIMD', options: { threads: 1, simd: 'fixed' },
    skip: (f) => (instances.ours.info.relaxedSimd ? null : 'the default build is the plain SIMD build in this engine (no relaxed SIMD)') },
  { id: 'ours2', label: 'favor-attention (wasm, 2 threads)', short: 'ours wasm, 2 threads', options: { threads: 2 }, threads: 2,
    skip: (f) => (f.info.threads === 2 ? null : `the threaded build reports ${f.info.threads} thread(s)`) },
];
const unavailable = [];
const methods = [];
const instances = {};  // id -> the favor instance
for (const { options, skip, ...entry } of OURS) {
  const instance = await loadFavor(options);
  instances[entry.id] = instance;
  const why = skip?.(instance);
  if (why) { unavailable.push(`${entry.label}: ${why}`); instance.dispose(); continue; }
  // Each build is read against the ceiling of its own instructions: fused multiply-adds or not.
  const relaxed = instance.info.relaxedSimd;
  const label = relaxed ? entry.label.replace('(wasm', '(wasm, relaxed SIMD') : entry.label;
  methods.push(await oursWasm(instance, { ...entry, label, ceiling: relaxed ? 'relaxed' : 'wasm' }));
}
const favor = instances.ours;
const featureMap = favor.createFeatureMap({ dim: config.d, features: config.m, kernel: 'positive', sampling: 'orthogonal', seed: config.seed });
const W = featureMap.projection.data;  // the same W goes to every implementation

async function add(factory, what) {
  try {
    methods.push(await factory());
  } catch (e) {
    unavailable.push(`${what}: ${e.message}`);
    log(`! ${what} unavailable: ${e.message}`);
  }
}
if (!args['no-native']) {
  // The ceiling loop is built for SSE (no FMA): the -march=native build has no ceiling of its own.
  for (const [id, label, short, dir, ceiling] of [
    ['sse', 'favor-attention native, -O3 -msse4.2 -mno-avx', 'native SSE4.2', 'bench-native-sse', 'sse'],
    ['avx', 'favor-attention native, -O3 -march=native', 'native -march=native', 'bench-native-native', null],
  ]) {
    const binary = path.join(repo, 'build', dir, 'favor_bench');
    if (!existsSync(binary)) { unavailable.push(`${label}: ${binary} not built (run bash bench/run.sh)`); continue; }
    await add(() => native({ id, label, short, binary, ceiling }), label);
  }
}
// A peer that cannot be installed or loaded is listed as unavailable, with its error.
if (!args['no-peers']) {
  await add(onnxruntime, 'onnxruntime-web');
  await add(onnxruntimeMha, 'onnxruntime-web MultiHeadAttention');
  await add(tfjs, 'tfjs-backend-wasm');
  await add(() => ruvector({ d: config.d, dv: config.dv, m: config.m, maxCallMs: config.maxCallMs }), 'ruvector-attention-wasm');
}
if (args.methods) {
  const keep = new Set(['ours', ...args.methods.split(',')]);
  for (let i = methods.length - 1; i >= 0; --i) if (!keep.has(methods[i].id)) { methods[i].close?.(); methods.splice(i, 1); }
}
for (const m of methods) log(`${m.label} ${m.version}: ${m.notes}`);

// --- Ceiling -----------------------------------------------------------------------------
// GFLOP/s of a register-only multiply-add loop (bench/native/peak_kernel.cpp), one per kind of
// build (a method's `ceiling` names one), measured before and after the sizes; the best is kept.
// The targets and the fraction-of-the-ceiling table are read against them.
const peakWasm = path.join(repo, 'build/bench-peak/peak.wasm');
const peakRelaxed = path.join(repo, 'build/bench-peak/peak-relaxed.wasm');
const ceilingSources = {
  wasm: existsSync(peakWasm) ? () => wasmCeiling(peakWasm) : null,
  relaxed: existsSync(peakRelaxed) && instances.ours.info.relaxedSimd ? () => wasmCeiling(peakRelaxed) : null,
  // The same with 8 chains: the accumulators of the 2- and 4-row GEMM tiles (what an engine that spills 12 runs).
  relaxed8: existsSync(peakRelaxed) && instances.ours.info.relaxedSimd ? () => wasmCeiling(peakRelaxed, { chains: 8 }) : null,
  sse: methods.find((m) => m.id === 'sse')?.measureCeiling,
};
const ceiling = Object.fromEntries(Object.keys(ceilingSources).map((k) => [k, null]));
async function measureCeiling() {
  for (const [k, measure] of Object.entries(ceilingSources)) {
    if (measure) ceiling[k] = Math.max(ceiling[k] ?? 0, await measure());
  }
}
await measureCeiling();
log(`ceiling (128-bit, registers only): wasm mul + add ${ceiling.wasm?.toFixed(1) ?? '-'} GFLOP/s, wasm relaxed_madd ${ceiling.relaxed?.toFixed(1) ?? '-'} GFLOP/s (8 chains ${ceiling.relaxed8?.toFixed(1) ?? '-'}), native SSE ${ceiling.sse?.toFixed(1) ?? '-'} GFLOP/s`);

// --- Sizes -------------------------------------------------------------------------------
// One size at a time: every implementation and every kernel (exact and FAVOR+, bidirectional
// and causal) on the same inputs. Each (implementation, kernel) is a "job": first checked, then
// timed in rounds that call every job once, in a rotating order, so that all ratios at a size
// (between implementations and between kernels) compare calls made side by side.
const kernels = [['exact', false], ['exact', true], ['favor', false], ['favor', true]];
const results = [];   // { kind, causal, L, method, status: 'ok'|'skip'|'fail'|'mismatch', ms, times, check, reason }
const stopped = new Map();  // `${method}/${kind}/${causal}` -> reason (no larger L after a skip or failure)
const lastMedian = new Map();
const jobName = (j) => `${j.m.id}/${j.kind}/${j.causal}`;

function record(r) {
  results.push(r);
  const what = r.status === 'ok' ? `${r.ms.toFixed(2)} ms` : `${r.status}: ${r.reason}`;
  log(`  ${r.kind} ${r.causal ? 'causal' : 'bidir.'} ${r.method.padEnd(5)} ${what}${r.check && r.status !== 'mismatch' ? `  (check rel ${r.check.rel.toExponential(1)})` : ''}`);
}
const message = (e) => `${e?.message ?? e}`.split('\n')[0].slice(0, 200);

// The output error, against exact attention, of a method that computes something other than our
// kernel; with two yardsticks at the same size: our FAVOR+'s error, and that of a uniform average
// of the values (the prefix mean when causal) — what any estimate of near-flat attention is near.
function againstExact(out, causal, reference) {
  const exact = reference.get(`exact/${causal}`);
  if (!exact) return { against: null, rel: null, maxRel: null };
  const ours = reference.get(`favor/${causal}`);
  const { L, v, dv } = current;
  const uniform = new Float32Array(L * dv), sum = new Float64Array(dv), total = new Float64Array(dv);
  for (let j = 0; j < L; ++j) for (let c = 0; c < dv; ++c) total[c] += v[j * dv + c];
  for (let i = 0; i < L; ++i) {
    for (let c = 0; c < dv; ++c) {
      sum[c] += v[i * dv + c];
      uniform[i * dv + c] = (causal ? sum[c] / (i + 1) : total[c] / L);
    }
  }
  return {
    ...difference(out, exact.out), against: `exact (${exact.method})`,
    oursFavorRel: ours?.method === 'ours' ? difference(ours.out, exact.out).rel : null,
    uniformRel: difference(uniform, exact.out).rel,
  };
}
let current = null;  // the size's cell, for againstExact

for (const L of config.sizes) {
  log(`L = ${L}`);
  const shape = { L, d: config.d, dv: config.dv, m: config.m };
  // Which jobs run: not stopped, within the implementation's limits, not predicted beyond the
  // per-call limit from the previous size.
  let jobs = [];
  for (const m of methods) {
    for (const [kind, causal] of kernels) {
      const job = { m, kind, causal };
      const key = jobName(job);
      const base = { kind, causal, L, method: m.id };
      const limit = m.limit?.({ kind, causal, L });
      if (stopped.has(key)) { record({ ...base, status: 'skip', reason: stopped.get(key) }); continue; }
      if (limit) { record({ ...base, status: 'skip', reason: limit }); continue; }
      const last = lastMedian.get(key);
      // The threads target reads our 1- and 2-thread exact attention at L = 16384: never predicted away.
      const target = (m.id === 'ours' || m.id === 'ours2') && kind === 'exact' && !causal && L === 16384;
      if (last && !target) {
        const predicted = last.ms * (L / last.L) ** (m.growth?.(kind) ?? (kind === 'exact' ? 2 : 1));
        if (predicted > config.maxCallMs) {
          const reason = `predicted ${(predicted / 1000).toFixed(1)} s per call > ${config.maxCallMs / 1000} s limit`;
          stopped.set(key, reason);
          record({ ...base, status: 'skip', reason });
          continue;
        }
      }
      jobs.push(job);
    }
  }
  if (jobs.length === 0) continue;
  const cell = {
    ...shape, featureMap, w: W,
    q: gaussian(L * config.d, 3 * L + 1, config.sigma),
    k: gaussian(L * config.d, 3 * L + 2, config.sigma),
    v: gaussian(L * config.dv, 3 * L + 3, config.sigma),
    file: path.join(tmpDir, 'inputs.f32'),
  };
  current = cell;
  if (jobs.some((j) => j.m.id === 'sse' || j.m.id === 'avx')) {
    const parts = [cell.q, cell.k, cell.v, cell.w];
    const bytes = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
    let off = 0;
    for (const p of parts) { bytes.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), off); off += p.byteLength; }
    writeFileSync(cell.file, bytes);
  }
  const fail = (job, status, reason, check) => {
    record({ kind: job.kind, causal: job.causal, L, method: job.m.id, status, reason, check });
    stopped.set(jobName(job), `${status === 'mismatch' ? 'mismatch' : 'failed'} at L = ${L}: ${reason}`);
    job.dead = true;
  };
  const prepared = [];
  for (const m of new Set(jobs.map((j) => j.m))) {
    try {
      await m.prepare(cell);
      prepared.push(m);
    } catch (e) {
      for (const j of jobs.filter((j) => j.m === m)) fail(j, 'fail', `prepare: ${message(e)}`);
    }
  }
  jobs = jobs.filter((j) => !j.dead);
  // First call of every job (a warm-up) and the check against the reference: ours, or the first
  // implementation that runs that kernel at this size. A job whose method computes something
  // else (differs) comes last and is compared with exact attention instead, not gated.
  const reference = new Map();
  const differs = (job) => job.m.differs?.(job.kind) ?? null;
  for (const job of [...jobs.filter((j) => !differs(j)), ...jobs.filter(differs)]) {
    const key = `${job.kind}/${job.causal}`;
    try {
      const t0 = performance.now();
      const out = await job.m.output(job.kind, job.causal);
      job.estimate = performance.now() - t0;
      if (differs(job)) {
        job.differs = differs(job);
        job.check = againstExact(out, job.causal, reference);
        continue;
      }
      if (!reference.has(key)) {
        reference.set(key, { method: job.m.id, out });
        job.check = { rel: 0, maxRel: 0, against: job.m.id };
        continue;
      }
      const ref = reference.get(key);
      job.check = { ...difference(out, ref.out), against: ref.method };
      if (!(job.check.rel <= config.tolerance && job.check.maxRel <= config.tolerance)) {
        fail(job, 'mismatch', `output differs from ${ref.method}: relative ${job.check.rel.toExponential(2)}, max ${job.check.maxRel.toExponential(2)} > ${config.tolerance}`, job.check);
      }
    } catch (e) {
      fail(job, 'fail', message(e));
    }
  }
  reference.clear();
  jobs = jobs.filter((j) => !j.dead);
  // A second warm-up for calls under 1 s; its time refines the estimate.
  for (const job of jobs) {
    if (job.estimate >= 1000) continue;
    try { job.estimate = await job.m.time(job.kind, job.causal); } catch (e) { fail(job, 'fail', message(e)); }
  }
  jobs = jobs.filter((j) => !j.dead);
  // Rounds: each calls every job once, in a rotating order.
  const total = jobs.reduce((s, j) => s + j.estimate, 0);
  const budget = config.budgetMs * kernels.length;
  const rounds = Math.max(config.minReps, Math.min(config.maxReps, Math.floor(budget / Math.max(total, 1e-3))));
  for (const job of jobs) job.times = [];
  for (let round = 0; round < rounds; ++round) {
    for (let i = 0; i < jobs.length; ++i) {
      const job = jobs[(i + round) % jobs.length];
      if (job.dead) continue;
      try { job.times.push(await job.m.time(job.kind, job.causal)); } catch (e) { fail(job, 'fail', message(e), job.check); }
    }
  }
  for (const job of jobs) {
    if (job.dead) continue;
    const ms = median(job.times);
    const gflops = job.differs ? null : flops(job.kind, job.causal, shape) / ms / 1e6;  // its work is not ours
    record({ kind: job.kind, causal: job.causal, L, method: job.m.id, status: 'ok', ms, times: job.times, check: job.check, gflops, ...(job.differs ? { differs: job.differs } : {}) });
    lastMedian.set(jobName(job), { L, ms });
  }
  for (const m of prepared) {
    try { await m.release(); } catch { /* ignore */ }
  }
}
await measureCeiling();

// --- Crossovers --------------------------------------------------------------------------
// For each of our builds marked `crossover` and m = 64, 128, 256 (positive, orthogonal, seed
// 42): the smallest L from which its FAVOR+ is faster than its exact attention, bidirectional and
// causal (bench/lib/crossover.mjs: a grid of powers of two, then a bisection).
const crossovers = [];
if (config.crossover) {
  const cc = config.crossover;
  for (const m of methods.filter((x) => x.crossover)) {
    for (const features of cc.features) {
      const fm = m.favor.createFeatureMap({ dim: config.d, features, kernel: 'positive', sampling: 'orthogonal', seed: config.seed });
      for (const causal of [false, true]) {
        const probes = [];
        const ratioAt = async (L) => {
          const p = measureRatio(m.favor, fm, { L, d: config.d, causal, sigma: config.sigma, budgetMs: cc.budgetMs, minRounds: cc.minRounds });
          probes.push({ L, ...p });
          log(`  crossover ${m.id} m = ${features} ${causal ? 'causal' : 'bidir.'} L = ${L}: exact ${p.exactMs.toFixed(2)} ms, FAVOR+ ${p.favorMs.toFixed(2)} ms, ratio ${p.ratio.toFixed(3)}`);
          return p.ratio;
        };
        const found = await searchCrossover(ratioAt, { grid: cc.grid, step: cc.step, enough: cc.enough });
        crossovers.push({ method: m.id, features, causal, ...found, probes });
      }
      fm.dispose();
    }
  }
}
for (const m of methods) m.close?.();
rmSync(tmpDir, { recursive: true, force: true });

// --- Scale test (fresh processes) --------------------------------------------------------
// Node (bench/scale.mjs) then headless Chromium (bench/scale-browser.mjs, a cross-origin isolated
// page), each on 1 thread (comparable run to run) and on 2 (the pthreads build, whose heap also
// holds the threads' stacks and states). Each in its own process: the heap it reports is that
// run's peak, not what the benchmarks above left.
let scale = null;
if (config.scale) {
  scale = [];
  for (const [script, threads] of config.scaleRuns) {
    log(`scale test: FAVOR+ L = ${config.scaleL}, threads ${threads} (bench/${script})`);
    const result = await new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(repo, 'bench', script), '--L', String(config.scaleL), '--threads', String(threads)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '', stderr = '';
      child.stdout.on('data', (b) => { stdout += b; });
      child.stderr.on('data', (b) => { stderr += b; });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10 * 60 * 1000);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        const line = stdout.trim().split('\n').pop();
        const environment = script.includes('browser') ? 'chromium' : 'node';
        try {
          resolve({ environment, ...JSON.parse(line), exit: code });
        } catch {
          resolve({ environment, L: config.scaleL, threads, failed: `exit ${signal ?? code}: ${(stderr || stdout).trim().split('\n').slice(-3).join(' | ').slice(0, 400)}` });
        }
      });
    });
    log(JSON.stringify(result));
    scale.push(result);
  }
}

// --- Report ------------------------------------------------------------------------------
const sh = (cmd, a) => { try { return execFileSync(cmd, a, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; } };
const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
const osRelease = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '';
const environment = {
  date: started.toISOString(),
  command: quick ? 'npm run bench -- --quick' : 'npm run bench',
  argv: process.argv.slice(2).join(' '),
  cpu: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model,
  cpuName: cpuIdentity(cpuinfo).name,
  cpuKey: cpuIdentity(cpuinfo).key,
  cores: os.cpus().length,
  flags: (/flags\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? '').split(' ').filter((f) => /^(sse4_2|avx|avx2|fma|avx512f)$/.test(f)).join(' '),
  memGiB: Math.round(os.totalmem() / 2 ** 30),
  os: /PRETTY_NAME="(.*)"/.exec(osRelease)?.[1] ?? os.type(),
  kernel: os.release(),
  node: process.version,
  gxx: sh('g++', ['--version'])?.split('\n')[0],
  emscripten: sh('dpkg-query', ['-W', '-f=${Version}', 'emscripten']),
  eigen: sh('dpkg-query', ['-W', '-f=${Version}', 'libeigen3-dev']),
  commit: sh('git', ['rev-parse', '--short', 'HEAD']),
  dirty: (sh('git', ['status', '--porcelain', '--', 'src', 'bindings', 'web', 'CMakeLists.txt']) ?? '') !== '',
  loadStart, loadEnd: os.loadavg(),
  tileRows: instances.ours.info.tileRows,
  ceiling,
  minutes: (performance.now() - wallStart) / 60000,
};
const data = {
  environment, config,
  methods: methods.map(({ id, label, short, version, notes, ours, ceiling: c, threads }) => ({ id, label, short, version, notes, ours: !!ours, ceiling: c ?? null, threads: threads ?? 1 })),
  unavailable, results, crossovers, scale, threads: instances.ours2?.info.threads ?? 1,
};
featureMap.dispose();
mkdirSync(path.dirname(resultsFile), { recursive: true });
const round = (key, value) => (typeof value === 'number' && !Number.isInteger(value) ? +value.toPrecision(5) : value);
const saved = JSON.stringify(data, round, 1);
writeFileSync(resultsFile, saved + '\n');
// The report from the saved (rounded) numbers, as --report-only reads them: rounding twice
// otherwise moves last digits (113.496 prints 113, saved 113.50 prints 114).
writeReport(JSON.parse(saved), { outFile, plotDir, resultsFile, history });
// Generation (causal states) and grouped-query heads, then the worker API's cost: their own
// scripts, into the same report.
// The side-by-side of the Chromium section also runs in Node 22, the maintenance LTS whose older V8
// spills the 6-row tile (installed from npm into build/node22 if missing), and in Firefox (Debian's firefox-esr, installed by
// scripts/ensure-deps.sh browser); without either, its old section stays and the log says why.
const runner = (what, find) => {
  try {
    return find();
  } catch (e) {
    log(`bench: no ${what} (${e.message.split('\n')[0]}); its section is not rewritten`);
    return null;
  }
};
const node22 = runner('Node 22 for bench/node-peers.mjs',
  () => execFileSync(path.join(repo, 'scripts/ensure-node.sh'), ['22'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim());
const firefox = runner('Firefox for bench/browser-peers.mjs --browser firefox',
  () => (execFileSync(path.join(repo, 'scripts/ensure-deps.sh'), ['browser'], { stdio: ['ignore', 'inherit', 'inherit'] }), process.execPath));
for (const [script, node, extra = []] of [['bench/decode.mjs', process.execPath], ['bench/window-decode.mjs', process.execPath], ['bench/worker.mjs', process.execPath], ['bench/packed.mjs', process.execPath], ['bench/feature-maps.mjs', process.execPath], ['bench/threads.mjs', process.execPath], ['bench/threads-browser.mjs', process.execPath], ['bench/work-span.mjs', process.execPath],
  ['bench/node-peers.mjs', node22], ['bench/browser-peers.mjs', process.execPath], ['bench/browser-peers.mjs', firefox, ['--browser', 'firefox']],
  ['bench/threads-browser.mjs', firefox, ['--browser', 'firefox']]]) {
  if (node) execFileSync(node, [path.join(repo, script), '--out', outFile, ...extra, ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'ignore', 'inherit'] });
}
log(`wrote ${path.relative(process.cwd(), outFile)}, ${path.relative(process.cwd(), plotDir)}/*.svg, ${path.relative(process.cwd(), resultsFile)} in ${environment.minutes.toFixed(1)} min`);
