// Two sections of BENCHMARKS.md about our kernels themselves: where FAVOR+ overtakes exact
// attention (bench/run.mjs's crossover search), and what fraction of its build's ceiling each
// kernel reaches at one size.
import { flops } from './inputs.mjs';
import { fmtL, fmtMs, fmtRatio, kindName, variant } from './format.mjs';

// L at which both kernels count the same flops (bench/lib/inputs.mjs): bidirectional
// 4 L² d = 4 L m (d + dv), causal 2 L² d = the same FAVOR+ count.
function equalWork(m, causal, { d, dv }) {
  const favorPerL = flops('favor', causal, { L: 1, d, dv, m });
  const exactPerL2 = flops('exact', causal, { L: 1, d, dv, m });
  return favorPerL / exactPerL2;
}

export function crossoverSection(data, view) {
  const { crossovers, config } = data;
  const md = [];
  md.push('## Crossovers: from which L our FAVOR+ is faster than our exact attention');
  md.push('');
  if (!crossovers?.length) {
    md.push('Not run (`--no-crossover`).');
    md.push('');
    return md;
  }
  const cc = config.crossover;
  const builds = [...new Set(crossovers.map((c) => c.method))];
  md.push(`FAVOR+ (positive features, orthogonal W, seed ${config.seed}) against exact attention, the same build, d = dv = ${config.d}, one head, S = L, inputs N(0, ${config.sigma}²), through the public API (each call copies its inputs in and the output out). ` +
    `Ratio = exact time ÷ FAVOR+ time (> 1: FAVOR+ faster): the median of per-round ratios over ${cc.minRounds}–41 rounds that call both kernels, in alternating order (~${cc.budgetMs} ms per point). ` +
    `Search: powers of two from ${cc.grid[0]} up to the first where FAVOR+ is ≥ ${cc.enough}× faster (beyond it exact's L² cost only widens the gap); the bracket is the last grid point where FAVOR+ was not faster and the next one; **the crossover is found by bisection** on multiples of ${cc.step} inside the bracket (the smallest L measured faster), and the log-log interpolation of the two bracketing ratios is shown beside it. ` +
    'Near the crossover the ratio is within run-to-run noise of 1, so the bisection\'s L moves by a few steps between runs. "Equal work" is where both kernels count the same flops (the GFLOP/s convention below; FAVOR+\'s exponentials and causal in-chunk block not counted): the old targets "faster from L = 512 / causal 1024" for m = 256 sat exactly there.');
  md.push('');
  const head = ['m', 'variant', 'FAVOR+ faster from L =', 'grid bracket (ratio)', 'log-log interpolation', 'equal work at L =', 'times at the crossover (exact / FAVOR+)', 'ratio on the grid'];
  if (builds.length > 1) head.unshift('build');
  md.push(`| ${head.join(' | ')} |`);
  md.push(`|${head.map(() => '---').join('|')}|`);
  for (const c of crossovers) {
    const at = c.probes?.find((p) => p.L === c.crossover);
    const row = [
      String(c.features), variant(c.causal),
      c.never ? `not on the grid (up to ${fmtL(c.grid.at(-1)[0])})` : c.below ? `≤ ${fmtL(c.crossover)}` : `**${fmtL(c.crossover)}**`,
      c.bracket ? `${fmtL(c.bracket[0])} (${fmtRatio(c.grid.find((p) => p[0] === c.bracket[0])[1])}×) – ${fmtL(c.bracket[1])} (${fmtRatio(c.grid.find((p) => p[0] === c.bracket[1])[1])}×)` : '—',
      c.interpolated ? fmtL(Math.round(c.interpolated)) : '—',
      fmtL(Math.round(equalWork(c.features, c.causal, config))),
      at ? `${fmtMs(at.exactMs)} / ${fmtMs(at.favorMs)} ms` : '—',
      c.grid.map(([L, r]) => `${fmtL(L)}: ${fmtRatio(r)}`).join(', '),
    ];
    if (builds.length > 1) row.unshift(view.label(c.method));
    md.push(`| ${row.join(' | ')} |`);
  }
  md.push('');
  const bisections = crossovers.filter((c) => c.bisection.length);
  if (bisections.length) {
    md.push(`Bisection steps (L: ratio): ${bisections.map((c) => `m = ${c.features} ${variant(c.causal)}: ${c.bisection.map(([L, r]) => `${fmtL(L)}: ${fmtRatio(r)}`).join(', ')}`).join('; ')}.`);
    md.push('');
  }
  return md;
}

export function ceilingSection(data, view) {
  const { config, methods, environment: env } = data;
  const L = config.ceilingAt ?? 4096;
  const md = [];
  md.push(`## Fraction of the ceiling at L = ${fmtL(L)}`);
  md.push('');
  md.push(`GFLOP/s of each kernel at L = ${fmtL(L)} (the counts of *What is measured*: exponentials, softmax and masking not counted, so no kernel can reach 100%) as a fraction of the ceiling of its own build: the register-only multiply-add loop of \`bench/native/peak_kernel.cpp\` built the same way (${Object.entries(env.ceiling ?? {}).filter(([k, v]) => v && k !== 'relaxed8').map(([k, v]) => `${k} ${v.toFixed(1)} GFLOP/s`).join(', ') || 'not measured'}), times the threads. Peers are read against the wasm ceiling (all are 128-bit wasm SIMD without FMA).`);
  md.push('');
  const kernels = [['exact', false], ['exact', true], ['favor', false], ['favor', true]];
  if (!data.results.some((r) => r.L === L && r.status === 'ok')) {
    md.push(`Not measured: L = ${fmtL(L)} was not among this run's sizes.`);
    md.push('');
    return md;
  }
  const ours = methods.filter((m) => m.ours ?? ['ours', 'ours2', 'sse', 'avx'].includes(m.id));
  const peers = methods.filter((m) => !ours.includes(m) && m.id !== 'ruvector');
  md.push(`| implementation | ceiling | ${kernels.map(([k, c]) => `${kindName(k)} ${variant(c)}`).join(' | ')} |`);
  md.push(`|---|---|${kernels.map(() => '---:').join('|')}|`);
  for (const m of [...ours, ...peers]) {
    const isPeer = peers.includes(m);
    const c = isPeer ? (env.ceiling?.wasm ? { key: 'wasm', value: env.ceiling.wasm, threads: 1 } : null) : view.ceilingOf(m.id);
    const cells = kernels.map(([kind, causal]) => {
      const r = view.get(m.id, kind, causal, L);
      if (r?.status !== 'ok' || r.gflops == null) return '—';
      return `${r.gflops.toFixed(1)}${c ? ` (${Math.round((100 * r.gflops) / c.value)}%)` : ''}`;
    });
    if (cells.every((x) => x === '—')) continue;
    const ceilingText = c ? `${c.key}${c.threads > 1 ? ` × ${c.threads} threads` : ''}: ${c.value.toFixed(1)}` : 'none measured for this build';
    md.push(`| ${m.label}${isPeer ? ' (peer)' : ''} | ${ceilingText} | ${cells.join(' | ')} |`);
  }
  md.push('');
  return md;
}
