#!/usr/bin/env node
// How far the thread bench's calls (bench/lib/thread-cases.mjs) can scale, as their split into
// regions allows, read on any machine, few cores included: each call's work and span, natively
// (bench/native/work_span.cpp on the core's SSE4.2 build, the closest to wasm's 128-bit SIMD),
// with every region split as it would be on T threads but run on one (src/favor/work_span.hpp).
// From them the speed-up over one thread that T threads allow if each runs as fast as one alone:
// at most one-thread time / max(work / T, span), and at least one-thread time /
// ((work - span) / T + span), which a scheduler that leaves no thread idle while an index waits
// reaches (Brent's bound). Beside them, the speed-up measured here on all the machine's threads.
// Writes its section into BENCHMARKS.md (between <!-- work-span --> markers) or --out FILE, and
// bench/work-span-results.json.
//
//   node bench/work-span.mjs [--quick] [--out FILE.md]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { cpuIdentity } from './lib/cpu-history.mjs';
import { fmtMs } from './lib/format.mjs';
import { writeSection } from './lib/sections.mjs';
import { CASES } from './lib/thread-cases.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const reps = args.quick ? 3 : 7;
const PLANS = [1, 2, 4, 8, 16];

// The native driver, built as bench/run.sh builds it (a no-op when it is up to date).
const dir = `${repo}build/bench-native-sse`;
const sh = (command, argv, env = process.env) => {
  const r = spawnSync(command, argv, { cwd: repo, env, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${command} ${argv.join(' ')} failed:\n${(r.stderr || r.stdout || String(r.error)).slice(-2000)}`);
  return r.stdout;
};
if (!existsSync(`${dir}/CMakeCache.txt`)) sh('cmake', ['-S', 'bench/native', '-B', dir, '-DCMAKE_BUILD_TYPE=Release', '-DCMAKE_CXX_FLAGS=-msse4.2 -mno-avx']);
sh('cmake', ['--build', dir, '-j2', '--target', 'work_span']);

// Every call of the thread bench with a fixed shape ('the same into out' is the same call natively).
const ids = Object.keys(CASES).filter((id) => CASES[id].H !== 'T' && !CASES[id].out);
const spec = (id) => {
  const c = CASES[id];
  return `${id}:${c.method}:${c.H}:${c.L}:${c.causal ? 1 : 0}:${c.state ?? 'favor'}`;
};
// glibc maps blocks of 128 KiB and more (a key chunk's features) anew at each call and unmaps them
// when freed, which wasm's allocator never does (its heap only grows): with the threshold raised,
// the native calls allocate as the wasm build does.
const GLIBC_TUNABLES = 'glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824';
const run = JSON.parse(sh(`${dir}/work_span`, ['--reps', String(reps), '--threads', PLANS.join(','), ...ids.flatMap((id) => ['--case', spec(id)])],
  { ...process.env, GLIBC_TUNABLES }));

let cpu = 'unknown CPU';
try { cpu = cpuIdentity(readFileSync('/proc/cpuinfo', 'utf8')).name; } catch { /* no /proc/cpuinfo */ }
const date = new Date().toISOString().slice(0, 10);
const decode = (id) => CASES[id].method === 'decode';
const rows = run.cases.map((c) => {
  const one = c.plans.find((p) => p.threads === 1).work;
  return {
    id: c.id, label: CASES[c.id].label, one,
    plans: c.plans.map(({ threads: T, work, span }) => ({
      threads: T, work, span, least: Math.min(T, one / ((work - span) / T + span)), most: Math.min(T, one / Math.max(work / T, span)),
    })),
    measured: c.timed.find((t) => t.threads === run.cores && run.cores > 1)?.speedup ?? null,
  };
});

const x = (r) => `${r.toFixed(1)}×`;
const md = [];
md.push('<!-- work-span -->', '## What the split allows: work and span', '');
md.push(`\`node bench/work-span.mjs\`${args.quick ? ' --quick' : ''}, ${date}, ${cpu}, ${run.cores} cores. The thread bench's calls natively ` +
  '(the core built with `-O3 -msse4.2 -mno-avx`, the closest to wasm\'s 128-bit SIMD; the same inputs, d = dv = 64, FAVOR+ m = 256 positive orthogonal), ' +
  'each region of the call split as it would be on T threads but its indices run one after another on one thread and timed (src/favor/work_span.hpp): ' +
  'the call\'s *work* is the time that took, its *span* the longest chain of steps that must run in order (the time outside regions plus, in each region, its longest index, recursively). ' +
  `Medians of ${reps} measurements; decode is ${run.steps} appends of one position after the prefill; glibc's allocator kept from mapping large blocks anew at each call, as wasm's never does. ` +
  'Each cell gives the speed-up over one thread that T threads allow if each runs as fast as one alone: at least one-thread time ÷ ((work − span) ÷ T + span), what a scheduler that leaves no thread idle while an index waits reaches (Brent\'s bound), and at most one-thread time ÷ max(work ÷ T, span) (both at most T; work here is at T\'s split). ' +
  'A machine\'s measured speed-up (Thread scaling) below the first figure comes from the machine, not the split: threads slower together than alone (clocks, caches, memory, a shared host), the hand-offs between them, and the copies to and from JS on the calling thread, which this leaves out. ' +
  `The last column is the speed-up measured here natively on ${run.cores} threads (the median of ${reps} ratios, one thread and ${run.cores} timed in turn), which the model has to bracket.`);
md.push('');
md.push(`| call | one thread | ${PLANS.filter((T) => T > 1).map((T) => `T = ${T}`).join(' | ')} | measured, T = ${run.cores} |`);
md.push(`|---|---:|${PLANS.filter((T) => T > 1).map(() => '---:|').join('')}---:|`);
for (const r of rows) {
  const one = decode(r.id) ? `${(run.steps / r.one / 1000).toFixed(1)}k tokens/s` : `${fmtMs(r.one * 1000)} ms`;
  const cells = r.plans.filter((p) => p.threads > 1).map((p) => `${x(p.least)}–${x(p.most)}`);
  md.push(`| ${r.label.replace(', tokens/s', '')} | ${one} | ${cells.join(' | ')} | ${r.measured ? x(r.measured) : '—'} |`);
}
const at16 = rows.map((r) => ({ r, p: r.plans.find((p) => p.threads === 16) })).filter(({ p }) => p);
if (at16.length) {
  md.push('', `Span at T = 16, and the work it leaves each thread (work ÷ 16): ${at16.map(({ r, p }) => `${r.label.replace(', tokens/s', '')}: ${fmtMs(p.span * 1000)} ms and ${fmtMs(p.work / 16 * 1000)} ms`).join('; ')}.`);
}
md.push('<!-- /work-span -->');
const section = md.join('\n');
console.log(section);
writeSection(args.out ?? `${repo}BENCHMARKS.md`, 'work-span', section);
if (!args.out || args.out.endsWith('BENCHMARKS.md')) {
  writeFileSync(`${repo}bench/work-span-results.json`, `${JSON.stringify({ cpu, cores: run.cores, date, reps, steps: run.steps, rows }, null, 1)}\n`);
}
