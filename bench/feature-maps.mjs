#!/usr/bin/env node
// What each feature map costs per favorAttention call at the standard size (one head,
// bidirectional, L = S = 4096, d = dv = 64, m = 256, inputs 0.5 N(0, 1)): every kernel with
// orthogonal sampling, and the positive kernel (FAVOR+) with every other sampling -- among them
// 'structured', whose W the map applies by fast Walsh-Hadamard transforms, and the same W given
// as an explicit projection (applied by the GEMM like any other), which isolates the transforms.
// That pair's outputs are checked close first. Interleaved rounds (the order rotated each round),
// medians; ratios to FAVOR+ positive/orthogonal are medians of per-round ratios. Node, the build
// loadFavor picks (relaxed SIMD in Node 26), 1 thread. Writes its section into BENCHMARKS.md
// (between <!-- feature-maps --> markers) or --out FILE, and bench/feature-maps-results.json (beside FILE with --out).
//
//   node bench/feature-maps.mjs [--quick] [--out FILE.md]
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { thisCpuName } from './lib/cpu-history.mjs';
import { fmtMs, fmtRatio } from './lib/format.mjs';
import { difference, gaussian, median } from './lib/inputs.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';

// The kernels timed with orthogonal sampling (kernels added to the library go here).
const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];
// Data-dependent kernels, timed twice: parameters from each call's q and k, and fitted once.
const FITTED = ['oprf', 'sderf', 'aderf'];
// The positive kernel's other samplings.
const SAMPLINGS = ['iid', 'simplex', 'structured'];

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const rounds = args.quick ? 9 : 15;
const L = 4096, d = 64, dv = 64, m = 256, seed = 42, sigma = 0.5;
const cpu = thisCpuName();

const favor = await loadFavor({ threads: 1 });
const q = { data: gaussian(L * d, 1, sigma), dims: [L, d] };
const k = { data: gaussian(L * d, 2, sigma), dims: [L, d] };
const v = { data: gaussian(L * dv, 3, 1), dims: [L, dv] };

const baseline = 'positive/orthogonal';
const configs = [
  ...KERNELS.map((kernel) => ({ id: `${kernel}/orthogonal`, label: `${kernel}, orthogonal${FITTED.includes(kernel) ? ' (parameters from the call\'s q and k)' : ''}`,
    map: favor.createFeatureMap({ dim: d, features: m, kernel, sampling: 'orthogonal', seed }) })),
  ...FITTED.map((kernel) => ({ id: `${kernel}/orthogonal-fitted`, label: `${kernel}, orthogonal (fitted once to the same q and k)`,
    map: favor.createFeatureMap({ dim: d, features: m, kernel, sampling: 'orthogonal', seed, fit: { q, k } }) })),
  ...SAMPLINGS.map((sampling) => ({ id: `positive/${sampling}`, label: `positive, ${sampling}${sampling === 'structured' ? ' (fast Walsh-Hadamard transforms)' : ''}`, map: favor.createFeatureMap({ dim: d, features: m, sampling, seed }) })),
];
const structured = configs.find((c) => c.id === 'positive/structured');
const explicit = favor.createFeatureMap({ projection: structured.map.projection });
configs.push({ id: 'positive/structured-explicit', label: 'positive, the same structured W as an explicit projection (GEMM)', map: explicit });

// The transforms against the GEMM with the same W: the same estimator to float rounding.
const fast = favor.favorAttention(q, k, v, { featureMap: structured.map }).data;
const dense = favor.favorAttention(q, k, v, { featureMap: explicit }).data;
const diff = difference(fast, dense);
if (!(diff.rel < 1e-4)) throw new Error(`structured: transforms and GEMM outputs differ by ${diff.rel} (relative)`);

const call = (c) => {
  const t0 = performance.now();
  favor.favorAttention(q, k, v, { featureMap: c.map });
  return performance.now() - t0;
};
for (let i = 0; i < 2; i++) for (const c of configs) call(c);  // warm-up
const times = new Map(configs.map((c) => [c.id, []]));
for (let r = 0; r < rounds; r++) {
  const order = configs.map((_, i) => configs[(i + r) % configs.length]);
  for (const c of order) times.get(c.id).push(call(c));
}
const base = times.get(baseline);
const rows = configs.map((c) => {
  const t = times.get(c.id);
  return { id: c.id, label: c.label, ms: median(t), ratio: median(t.map((x, i) => x / base[i])) };
});
for (const r of rows) console.error(`  ${r.label}: ${r.ms.toFixed(2)} ms, ${r.ratio.toFixed(3)}x`);

const date = new Date().toISOString().slice(0, 10);
const md = ['<!-- feature-maps -->', '## Feature maps: cost per call', ''];
md.push(`\`node bench/feature-maps.mjs\`${args.quick ? ' --quick' : ''}, ${date}, ${cpu}, Node ${process.version}, ${favor.info.relaxedSimd ? 'relaxed SIMD' : favor.info.simd ? 'SIMD' : 'scalar'} build, 1 thread. ` +
  `One favorAttention call, one head, bidirectional, L = S = ${L.toLocaleString('en-US')}, d = dv = ${d}, m = ${m}, inputs ${sigma} N(0, 1), seed ${seed}: every kernel with orthogonal sampling (OPRF and FAVOR#'s SDERF and ADERF twice: with their parameters computed from the call's q and k, and fitted once beforehand), then the positive kernel (FAVOR+) with the other samplings. ` +
  "'structured' (SORF) projects each row by three fast Walsh-Hadamard transforms per block of d features (O(m/d · p log p) a row against the GEMM's m d); the last row gives the same W as an explicit projection, which takes the GEMM (their outputs differ by " +
  `${diff.rel.toExponential(1)} relative, checked first). Medians of ${rounds} interleaved rounds; the ratio is the median of per-round ratios to positive/orthogonal (below 1: faster).`);
md.push('', '| feature map | ms per call | ÷ positive, orthogonal |', '|---|---:|---:|');
for (const r of rows) md.push(`| ${r.label} | ${fmtMs(r.ms)} | ${fmtRatio(r.ratio)}× |`);
const sorf = rows.find((r) => r.id === 'positive/structured');
md.push('', `FAVOR+ with 'structured' sampling runs ${fmtRatio(1 / sorf.ratio)}× as fast as with 'orthogonal' (the dense W's GEMM) in this run.`);
md.push('<!-- /feature-maps -->');
const section = md.join('\n');
const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, 'feature-maps', section);
writeFileSync(resultsFileFor(outFile, 'feature-maps-results.json'), `${JSON.stringify({ cpu, node: process.version, info: favor.info, date, rounds, L, d, dv, m, seed, rows }, null, 1)}\n`);
console.log(section);
for (const c of configs) c.map.dispose();
