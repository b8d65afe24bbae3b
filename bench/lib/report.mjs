// BENCHMARKS.md and the SVG plots from the results of bench/run.mjs.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { fmtL, fmtMs, fmtRatio, resultsView, variant } from './format.mjs';
import { ceilingSection, crossoverSection } from './report-crossover.mjs';
import { peersSection } from './report-peers.mjs';
import { logLogPlot } from './plot.mjs';

const STYLE = {
  ours: { color: '#d62728' },
  plain: { color: '#e377c2', dash: '3 2' },
  sse: { color: '#ff7f0e', dash: '6 4' },
  avx: { color: '#8c564b', dash: '2 3' },
  ort: { color: '#1f77b4' },
  ortmha: { color: '#17becf', dash: '4 2' },
  tfjs: { color: '#2ca02c' },
  ruvector: { color: '#7f7f7f', dash: '1 3' },
};
const KIND = { exact: 'Exact attention', favor: 'FAVOR+ (positive, m = 256)' };
const slug = (kind, causal) => `${kind}-${variant(causal)}`;
const MiB = 2 ** 20;

export function writeReport(data, { outFile, plotDir, resultsFile }) {
  const { environment: env, config, methods, results } = data;
  const view = resultsView(data);
  const { get, ms, pairedJobs, paired, label } = view;
  const has = (id) => methods.some((m) => m.id === id);
  const peers = methods.filter((m) => m.id !== 'ours');
  const relOut = path.relative(path.dirname(outFile), plotDir).split(path.sep).join('/') || '.';

  // --- Plots ---
  mkdirSync(plotDir, { recursive: true });
  const plots = [];
  for (const kind of ['exact', 'favor']) {
    for (const causal of [false, true]) {
      const series = methods.map((m) => ({
        name: m.short, ...STYLE[m.id],
        points: config.sizes.map((L) => [L, ms(m.id, kind, causal, L)]).filter((p) => p[1] !== null),
      })).filter((s) => s.points.length);
      const file = `${slug(kind, causal)}.svg`;
      writeFileSync(path.join(plotDir, file), logLogPlot({ title: `${KIND[kind]}, ${variant(causal)}, d = 64`, subtitle: `median time per call; ${env.cpu}, 1 thread`, series }));
      plots.push({ file, title: `${KIND[kind]}, ${variant(causal)}` });
    }
  }
  const own = [];
  for (const [id, suffix] of [['ours', 'wasm'], ['avx', 'native']]) {
    if (!has(id)) continue;
    for (const kind of ['exact', 'favor']) {
      for (const causal of [false, true]) {
        own.push({
          name: `${kind === 'exact' ? 'exact' : 'FAVOR+'} ${causal ? 'causal' : 'bidir.'}, ${suffix}`,
          color: kind === 'exact' ? (causal ? '#9467bd' : '#d62728') : (causal ? '#17becf' : '#1f77b4'),
          dash: id === 'ours' ? undefined : '2 3',
          points: config.sizes.map((L) => [L, ms(id, kind, causal, L)]).filter((p) => p[1] !== null),
        });
      }
    }
  }
  writeFileSync(path.join(plotDir, 'ours-exact-vs-favor.svg'), logLogPlot({ title: 'favor-attention: exact vs FAVOR+ (m = 256), d = 64', subtitle: 'wasm (solid) and native -march=native (dotted), median time per call', series: own.filter((s) => s.points.length) }));
  plots.unshift({ file: 'ours-exact-vs-favor.svg', title: 'favor-attention: exact vs FAVOR+' });

  // --- Targets ---
  const targets = [];
  const verdict = (ok) => (ok === null ? 'NOT MEASURED' : ok ? 'PASS' : 'FAIL');
  // Our reference build's ceiling (bench/lib/ceiling.mjs): what fraction of it a rate is.
  const top = view.ceilingOf('ours')?.value ?? null;
  const topName = view.ceilingOf('ours')?.key ?? 'wasm';
  const ofTop = (gflops) => (top ? ` = ${Math.round((100 * gflops) / top)}% of the ${topName} ceiling ${top.toFixed(1)} GFLOP/s` : '');
  const rate = (method, kind, causal, L) => get(method, kind, causal, L)?.gflops ?? null;
  {
    const r = paired('ort', 'ours', 'favor', false, 4096);
    // 2× means running the same flops in half of ort's time: the rate that takes, against the ceiling.
    const ortRate = rate('ort', 'favor', false, 4096), ourRate = rate('ours', 'favor', false, 4096);
    const need = r === null || ortRate === null || ourRate === null ? ''
      : `; 2× needs ${(2 * ortRate).toFixed(1)} GFLOP/s end to end (exponentials not counted)${ofTop(2 * ortRate)}; ours runs at ${ourRate.toFixed(1)} GFLOP/s${top ? ` (${Math.round((100 * ourRate) / top)}%)` : ''}, ort at ${ortRate.toFixed(1)}` +
        (env.tileRows === 4 && env.ceiling?.relaxed8 ? `; this engine runs the 4-row GEMM tile (its V8 spills the 6-row one), whose 8 accumulators reach at most ${env.ceiling.relaxed8.toFixed(1)} GFLOP/s (the ceiling loop with 8 chains)` : '');
    targets.push(['FAVOR+ bidirectional ≥ 2× faster than onnxruntime-web at L = 4096, d = 64, m = 256',
      r === null ? 'not measured' : `${fmtRatio(r)}× (medians: ort ${fmtMs(ms('ort', 'favor', false, 4096))} ms, ours ${fmtMs(ms('ours', 'favor', false, 4096))} ms)${need}`, verdict(r === null ? null : r >= 2)]);
  }
  {
    const r = paired('ort', 'ours', 'exact', false, 4096);
    const rc = paired('ort', 'ours', 'exact', true, 4096);
    targets.push(['Exact attention ≥ 1.5× faster than onnxruntime-web at L = 4096 (bidirectional; 1.2× before the relaxed-SIMD build)',
      r === null ? 'not measured' : `${fmtRatio(r)}× (medians: ort ${fmtMs(ms('ort', 'exact', false, 4096))} ms, ours ${fmtMs(ms('ours', 'exact', false, 4096))} ms)${rc !== null ? `; causal: ${fmtRatio(rc)}×` : ''}`, verdict(r === null ? null : r >= 1.5)]);
  }
  // The relaxed-SIMD build against its plain SIMD twin (the 'plain' row exists only when 'ours'
  // is the relaxed build), with the ceilings' own ratio: how much the fused instruction can give here.
  for (const [kind, name, need] of [['favor', 'FAVOR+', 1.2], ['exact', 'Exact attention', 1.15]]) {
    const r = paired('plain', 'ours', kind, false, 4096);
    const c = env.ceiling?.relaxed && env.ceiling?.wasm ? env.ceiling.relaxed / env.ceiling.wasm : null;
    const rc = paired('plain', 'ours', kind, true, 4096);
    targets.push([`${name} in the relaxed-SIMD build ≥ ${need}× faster than in the plain SIMD build at L = 4096, 1 thread (bidirectional)`,
      !has('plain') ? 'not measured (this engine has no relaxed SIMD: run under Node ≥ 22, as bench/run.sh does)'
        : r === null ? 'not measured'
          : `${fmtRatio(r)}× (medians: plain ${fmtMs(ms('plain', kind, false, 4096))} ms, relaxed ${fmtMs(ms('ours', kind, false, 4096))} ms)${rc !== null ? `; causal: ${fmtRatio(rc)}×` : ''}${c ? `; on this CPU the fused ceiling is ${fmtRatio(c)}× the separate one, the most a kernel at the same fraction of its ceiling can gain` : ''}`,
      verdict(r === null ? null : r >= need)]);
  }
  {
    const all = config.sizes.map((L) => [L, pairedJobs('ours', 'favor', true, 'ours', 'favor', false, L)]).filter((p) => p[1] !== null);
    const pairs = all.filter((p) => p[0] >= 1024);
    const worst = pairs.reduce((w, p) => (!w || p[1] > w[1] ? p : w), null);
    const at4096 = pairs.find((p) => p[0] === 4096);
    const small = all.filter((p) => p[0] < 1024);
    targets.push(['Causal FAVOR+ within 1.5× of bidirectional FAVOR+ (ours, wasm; causal time / bidirectional time at every measured L ≥ 1024)',
      worst ? `${at4096 ? `${fmtRatio(at4096[1])}× at L = 4096, ` : ''}worst ${fmtRatio(worst[1])}× at L = ${fmtL(worst[0])}, best ${fmtRatio(Math.min(...pairs.map((p) => p[1])))}×${small.length ? `; below 1024: ${small.map((p) => `${fmtRatio(p[1])}× at ${fmtL(p[0])}`).join(', ')}` : ''}` : 'not measured',
      verdict(worst ? worst[1] <= 1.5 : null)]);
  }
  // FAVOR+ against our exact attention: no target; the crossovers have a section of their own.
  {
    const parts = [];
    let all = true, any = false;
    for (const kind of ['exact', 'favor']) {
      for (const causal of [false, true]) {
        const pairs = config.sizes.filter((L) => L >= 1024).map((L) => [L, paired('ours', 'sse', kind, causal, L)]).filter((p) => p[1] !== null);
        if (!pairs.length) { parts.push(`${kind} ${variant(causal)}: not measured`); all = false; continue; }
        any = true;
        const worst = pairs.reduce((w, p) => (p[1] > w[1] ? p : w));
        const at = pairs.find((p) => p[0] === 4096);
        if (worst[1] > 1.5) all = false;
        parts.push(`${kind === 'exact' ? 'exact' : 'FAVOR+'} ${variant(causal)}: ${at ? `${fmtRatio(at[1])}× at 4096, ` : ''}worst ${fmtRatio(worst[1])}× (L = ${fmtL(worst[0])})`);
      }
    }
    targets.push(['wasm SIMD within 1.5× of the native build for 128-bit SSE only (-O3 -msse4.2 -mno-avx), kernel for kernel (wasm time / native time, every measured L ≥ 1024)',
      parts.join('; '), verdict(any ? all : null)]);
  }
  {
    // Speed-up = 1-thread time / 2-thread time, paired within rounds like every other ratio.
    const speedup = (kind, causal) => { const r = pairedJobs('ours2', kind, causal, 'ours', kind, causal, 16384); return r === null ? null : 1 / r; };
    const r = speedup('exact', false);
    const others = [['exact causal', 'exact', true], ['FAVOR+', 'favor', false], ['FAVOR+ causal', 'favor', true]]
      .map(([name, kind, causal]) => [name, speedup(kind, causal)]).filter((p) => p[1] !== null);
    targets.push(['Threads ≥ 1.7× on 2 threads at L = 16384 (exact attention, bidirectional; wasm 1-thread time / 2-thread time)',
      !has('ours2') ? `not available: the threaded build reports ${data.threads} thread(s)`
        : r === null ? 'not measured (L = 16384 not run)'
          : `${fmtRatio(r)}× (medians: 1 thread ${fmtMs(ms('ours', 'exact', false, 16384))} ms, 2 threads ${fmtMs(ms('ours2', 'exact', false, 16384))} ms)${others.map(([n, x]) => `; ${n}: ${fmtRatio(x)}×`).join('')}`,
      has('ours2') ? verdict(r === null ? null : r >= 1.7) : 'NOT AVAILABLE']);
  }
  // Scale: one entry per fresh process (Node, Chromium; 1 and 2 threads). Results saved before
  // the browser run existed hold one Node object.
  const sc = data.scale && (Array.isArray(data.scale) ? data.scale : [{ environment: 'node', threads: 1, ...data.scale }]);
  const maxHeapMiB = config.scaleMaxHeapMiB ?? 1536;
  const where = (e) => `${e.environment === 'chromium' ? 'Chromium' : 'Node'}, ${e.threads ?? '?'} thread${e.threads === 1 ? '' : 's'}`;
  const peakMiB = (e) => Math.max(e.peakHeapBytes ?? 0, ...e.runs.map((r) => r.heapAfterBytes)) / MiB;
  const scaleOk = (e) => !e.failed && e.runs.length === 2 && e.runs.every((r) => !r.error && r.finite) && peakMiB(e) < maxHeapMiB;
  if (sc) {
    const text = sc.map((e) => `${where(e)}: ${e.failed ? `failed (${e.failed})`
      : `${e.runs.map((r) => `${variant(r.causal)} ${r.error ? `failed (${r.error})` : `${(r.ms / 1000).toFixed(1)} s${r.finite ? '' : ' (output NOT finite)'}`}`).join(', ')}, peak wasm heap ${peakMiB(e).toFixed(0)} MiB`}`).join('; ');
    const ran = (env) => sc.some((e) => e.environment === env);
    const missing = ['node', 'chromium'].filter((env) => !ran(env)).map((env) => `${env === 'node' ? 'Node' : 'the browser'} was not run`);
    targets.push([`Scale: FAVOR+ bidirectional and causal at L = ${fmtL(sc[0].L)}, d = 64, m = 256 in Node and in the browser, peak wasm heap < ${maxHeapMiB} MiB`,
      (text + missing.map((x) => `; ${x}`).join('')).replace(/\|/g, '\\|'), verdict(missing.length === 0 && sc.every(scaleOk))]);
  } else {
    targets.push(['Scale: FAVOR+ at L = 1,048,576 in Node and in the browser', 'not run (--quick or --no-scale)', 'NOT RUN']);
  }

  // --- Markdown ---
  const md = [];
  md.push('# Benchmarks');
  md.push('');
  md.push(`Generated by \`${env.command}\` (\`bash bench/run.sh${env.argv ? ` ${env.argv}` : ''}\` → \`node bench/run.mjs\`) on ${env.date.slice(0, 10)} at ${env.date.slice(11, 16)} UTC; the run took ${env.minutes.toFixed(1)} min. Do not edit by hand: rerun the command.`);
  md.push('');
  md.push('## Machine');
  md.push('');
  md.push(`- CPU: ${env.cpu}, ${env.cores} cores visible (${env.flags}), ${env.memGiB} GiB RAM; ${env.os}, Linux ${env.kernel}`);
  md.push(`- Node ${env.node}; ${env.gxx}; Emscripten ${env.emscripten} (Debian); Eigen ${env.eigen}`);
  md.push(`- favor-attention ${methods.find((m) => m.id === 'ours')?.version} at commit ${env.commit}${env.dirty ? ' plus uncommitted changes in src/, bindings/ or web/' : ''}`);
  if (env.ceiling?.wasm || env.ceiling?.sse) md.push(`- Ceiling for float32 code made of 128-bit multiply-adds: ${[env.ceiling.wasm && `wasm with separate multiplies and adds (the SIMD build) ${env.ceiling.wasm.toFixed(1)} GFLOP/s`, env.ceiling.relaxed && `wasm with f32x4.relaxed_madd (the relaxed-SIMD build; fused on this CPU when the relaxed-SIMD tests say so) ${env.ceiling.relaxed.toFixed(1)} GFLOP/s (${(env.ceiling.relaxed / env.ceiling.wasm).toFixed(2)}× the separate one${env.ceiling.relaxed8 ? `; with 8 chains, the accumulators of the GEMM's 4-row tile, ${env.ceiling.relaxed8.toFixed(1)} GFLOP/s` : ''})`, env.ceiling.sse && `native SSE4.2, separate ${env.ceiling.sse.toFixed(1)} GFLOP/s`].filter(Boolean).join('; ')} — 12 independent multiply-add chains in registers, no memory traffic (\`bench/native/peak_kernel.cpp\`), best of 7 runs before and after the sizes. No kernel with loads, stores and exponentials reaches it. Each of our builds is read against the ceiling of its own instructions.`);
  md.push(`- Load average at start ${env.loadStart.map((x) => x.toFixed(2)).join(', ')}, at end ${env.loadEnd.map((x) => x.toFixed(2)).join(', ')} (a shared 2-core machine: absolute times drift; the ratios compare calls interleaved in the same run)`);
  md.push('');
  md.push('| implementation | version | settings |');
  md.push('|---|---|---|');
  for (const m of methods) md.push(`| ${m.label} | ${m.version} | ${m.notes.replace(/\|/g, '\\|')} |`);
  for (const u of data.unavailable) md.push(`| ${u} | — | not run |`);
  md.push('');
  md.push('## Targets (issues #6 and #16)');
  md.push('');
  md.push('| target | measured | result |');
  md.push('|---|---|---|');
  for (const [t, m, v] of targets) md.push(`| ${t} | ${m} | **${v}** |`);
  md.push('');
  md.push('## What is measured');
  md.push('');
  md.push(`- One head, d = dv = ${config.d}, S = L, default scale 1/√d. Inputs q, k, v: float32 N(0, ${config.sigma}²) from a fixed seed per L. FAVOR+: the positive kernel with m = ${config.m} features and the projection W (orthogonal sampling, seed ${config.seed}) taken from \`featureMap.projection\`: every implementation gets that same W.`);
  md.push('- **favor-attention (wasm)**: `favor.exactAttention` / `favor.favorAttention` through the public JS API in Node (`loadFavor()`: in Node ≥ 22, which `bench/run.sh` uses, the relaxed-SIMD build with fused multiply-adds, the build current browsers get; **ours plain SIMD** is `loadFavor({ simd: \'fixed\' })`, separate multiplies and adds, in the same process); every call copies q, k, v into the wasm heap and the output out, and that is timed. Exact attention streams key blocks (online softmax), never forming L×S; FAVOR+ runs with the default chunk (128 rows bidirectional; causal: chunks of 32 rows with a carried state).');
  md.push('- **native**: the same C++ core, linked from the same sources (bench/native, a CMake project that adds the repository root), built with `-O3 -msse4.2 -mno-avx` (the 128-bit SSE reference) and with `-O3 -march=native`; a long-lived process calls the same tensor entry points as the wasm bindings and times each call with `steady_clock` (no copies, no IPC in the time).');
  md.push('- **onnxruntime-web**: wasm backend in Node, `ort.env.wasm.numThreads = 1`, graphs in `bench/onnx/*.onnx` written by `bench/onnx/generate.py` (python3-onnx, opset 11, committed). Exact: `MatMul(q·scale, kᵀ) → Softmax → MatMul v`; causal adds −∞ above the diagonal with a mask built inside the graph (`Range`, `Greater`, `Where`), so no L×L mask is copied per call. FAVOR+: the same formulas and stabilization as our core (per-feature key max, query row max; shifts that cancel exactly): `x̃ = x·d^(−1/4)`, `K′ = exp(W k̃ − |k̃|²/2 − c)`, `Q′ = exp(W q̃ + c − rowmax)`, `out = Q′(K′ᵀv) / Q′(K′ᵀ1)`. Causal FAVOR+: a chunked prefix sum (chunks of 128 rows): a masked Q′K′ᵀ block inside each chunk, and the per-chunk states K′ᵀv (L/128 × m × dv) and K′ᵀ1 summed over chunks by an exclusive `CumSum`; linear in L, memory L/128·m·dv floats (no L×m×dv tensor), needs L to be a multiple of 128.');
  if (has('ortmha')) md.push('- **onnxruntime-web, fused MultiHeadAttention**: the same runtime and settings, on one node `com.microsoft.MultiHeadAttention` (onnxruntime\'s contrib op, the one its transformer optimizer fuses attention into; `bench/onnx/mha-*.onnx`), num_heads 1, q, k, v fed as (1, L, 64); causal: its attribute `unidirectional = 1`. Exact attention only.');
  md.push('- **TensorFlow.js**: `@tensorflow/tfjs-core` with `@tensorflow/tfjs-backend-wasm` (SIMD binary, multithreading disabled, 1 thread), the same computations as the ONNX graphs written with `tf.matMul`, `tf.softmax`, `tf.exp`, `tf.max`, `tf.sum`, `tf.cumsum`. Inputs are placed on the backend once per size (not timed, as a model\'s tensors would be); the causal exact mask (−∞ above the diagonal) is built once per L and kept on the backend. Each call ends with `dataSync()`.');
  if (has('ruvector')) md.push(`- **ruvector-attention-wasm**: its wasm module loaded with \`initSync\` from the package's .wasm; one query per call, so L queries are a loop of L calls (see *Peers a user would compare*). Exact: \`WasmFlashAttention(64, 64)\`, checked like every peer. FAVOR+ row: \`WasmLinearAttention(64, ${config.m})\`, which takes no W: **not the same computation** (‡), timed, and its output compared with exact attention rather than with ours. Its time grows as L² for both (every call converts all keys), which the time limit takes into account.`);
  md.push(`- **Equality first**: at every size, before any timing, each implementation's output is compared with ours (favor-attention wasm; with the first implementation that runs when ours is skipped) on the same inputs and W: relative Frobenius difference and max |difference| / max |ours| must both be ≤ ${config.tolerance}, or the implementation is not timed at that size and beyond ("mismatch"). Largest differences seen are listed below.`);
  md.push(`- **Timing**: one size at a time, on the same inputs for every implementation and kernel (exact and FAVOR+, bidirectional and causal). Every (implementation, kernel) runs once (the check) and, when that took < 1 s, once more as a warm-up; then rounds that call each of them once in a rotating order (interleaved, so load changes hit all alike), ${config.minReps}–${config.maxReps} rounds within ~${(4 * config.budgetMs / 1000).toFixed(0)} s per size (more when the calls are slow). Reported: the median. An implementation is not run at a size where its time predicted from the previous size (×4 per doubling for exact, ×2 for FAVOR+, ×4 for both for ruvector-attention-wasm) exceeds ${config.maxCallMs / 1000} s per call, nor after it failed (marked —).`);
  md.push(`- **GFLOP/s** counts 4·L·S·d for exact attention (QKᵀ and AV; 2·L·S·d when causal) and 2·(L+S)·m·d + 4·L·m·dv for FAVOR+ (the features, then K′ᵀV and the readout; the same count when causal). Exponentials, softmax and masking are not counted.`);
  md.push('- **Ratios** are peer time ÷ our wasm time from the same run: above 1 our wasm build is faster. Every ratio (the "÷ ours" columns and the targets, also causal vs bidirectional and the crossovers\' FAVOR+ vs exact) is the median over rounds of the two times\' ratio within the same round, which cancels load phases that slow a whole round; it can differ a little from the ratio of the two medians shown.');
  md.push('- **Targets** that must hold at every size are judged from L = 1024 up: below it a call lasts a few ms and fixed per-call costs (JS copies, setup) and timer noise dominate; the smaller sizes are listed next to the verdict.');
  md.push('');
  md.push('## Results');
  md.push('');
  md.push(`Cells: median ms per call (GFLOP/s). ‡: not the same computation (timed, not checked against ours; no GFLOP/s: its work is not ours). Plots: time against L, log-log.`);
  md.push('');
  for (const kind of ['exact', 'favor']) {
    for (const causal of [false, true]) {
      md.push(`### ${KIND[kind]}, ${variant(causal)}`);
      md.push('');
      md.push(`![${KIND[kind]}, ${variant(causal)}](${relOut}/${slug(kind, causal)}.svg)`);
      md.push('');
      const head = ['L', ...methods.map((m) => m.short), ...peers.map((p) => `${p.short} ÷ ours`)];
      md.push(`| ${head.join(' | ')} |`);
      md.push(`|${head.map(() => '---:').join('|')}|`);
      const notes = new Map();
      for (const L of config.sizes) {
        const row = [fmtL(L)];
        for (const m of methods) {
          const r = get(m.id, kind, causal, L);
          if (r?.status === 'ok' && r.differs) {
            row.push(`${fmtMs(r.ms)} ‡`);
            const key = `‡ ${m.short}: not the same computation: ${r.differs}; output error vs exact attention (relative Frobenius)`;
            if (!notes.has(key)) notes.set(key, []);
            notes.get(key).push(`${r.check?.rel?.toFixed(2) ?? '—'} at L = ${fmtL(L)}`);
          } else if (r?.status === 'ok') row.push(`${fmtMs(r.ms)} (${r.gflops.toFixed(1)})`);
          else {
            row.push(r?.status === 'fail' ? 'failed' : r?.status === 'mismatch' ? 'mismatch' : '—');
            if (r) {
              const key = `${m.short}: ${r.reason}`;
              if (!notes.has(key)) notes.set(key, []);
              notes.get(key).push(L);
            }
          }
        }
        for (const p of peers) {
          const x = paired(p.id, 'ours', kind, causal, L);
          row.push(x !== null ? `${fmtRatio(x)}×${get(p.id, kind, causal, L)?.differs ? ' ‡' : ''}` : '—');
        }
        md.push(`| ${row.join(' | ')} |`);
      }
      if (notes.size) {
        md.push('');
        for (const [k, Ls] of notes) md.push(k.startsWith('‡') ? `- ${k}: ${Ls.join(', ')}` : `- — ${k} (L = ${Ls.map(fmtL).join(', ')})`);
      }
      md.push('');
    }
  }
  md.push('### favor-attention: exact against FAVOR+');
  md.push('');
  md.push(`![favor-attention: exact vs FAVOR+](${relOut}/ours-exact-vs-favor.svg)`);
  md.push('');
  md.push(...peersSection(data, view));
  md.push(...crossoverSection(data, view));
  md.push(...ceilingSection(data, view));
  md.push('## Output checks');
  md.push('');
  md.push('Largest difference to the reference over all sizes where the implementation was checked (relative Frobenius / max |Δ| ÷ max |ref|):');
  md.push('');
  md.push(`| implementation | ${['exact', 'favor'].flatMap((k) => [false, true].map((c) => `${k === 'exact' ? 'exact' : 'FAVOR+'} ${variant(c)}`)).join(' | ')} |`);
  md.push('|---|---:|---:|---:|---:|');
  for (const m of peers) {
    const row = [m.label];
    for (const kind of ['exact', 'favor']) {
      for (const causal of [false, true]) {
        const checks = results.filter((r) => r.method === m.id && r.kind === kind && r.causal === causal && r.check && r.check.against !== m.id);
        if (!checks.length) { row.push('—'); continue; }
        if (checks.every((r) => r.differs)) {
          const rel = Math.max(...checks.map((r) => r.check.rel ?? NaN));
          row.push(`‡ ${rel.toFixed(2)} vs exact (not the same computation)`);
          continue;
        }
        const rel = Math.max(...checks.map((r) => r.check.rel)), mx = Math.max(...checks.map((r) => r.check.maxRel));
        const bad = checks.some((r) => r.status === 'mismatch');
        row.push(`${rel.toExponential(1)} / ${mx.toExponential(1)}${bad ? ' (mismatch)' : ''}`);
      }
    }
    md.push(`| ${row.join(' | ')} |`);
  }
  md.push('');
  const references = results.filter((r) => r.status === 'ok' && r.method !== 'ours' && r.check?.against === r.method);
  if (references.length) {
    md.push('Where our wasm build was not run (beyond its time limit), the first implementation that ran was the reference and the others were checked against it; these timings had no other implementation to compare with at that size (they share the core with the wasm build, checked at the smaller sizes): ' +
      references.map((r) => `${label(r.method)} ${r.kind === 'exact' ? 'exact' : 'FAVOR+'} ${variant(r.causal)} at L = ${fmtL(r.L)}`).join('; ') + '.');
    md.push('');
  }
  md.push(`## Scale: L = ${sc ? fmtL(sc[0].L) : '1,048,576'}`);
  md.push('');
  if (!sc) {
    md.push('Not run (`--quick` or `--no-scale`).');
  } else {
    const e0 = sc.find((e) => !e.failed) ?? sc[0];
    md.push(`FAVOR+ (positive, m = ${e0.m ?? 256}, orthogonal W, seed 42), d = ${e0.d ?? 64}, L = S = ${fmtL(e0.L)}, bidirectional then causal on the same inputs, through the public API, each configuration in a fresh process: \`node bench/scale.mjs --threads N\` (Node, \`loadFavor\` from web/node.js) and \`node bench/scale-browser.mjs --threads N\` (headless ${sc.find((e) => e.browser)?.browser ?? 'Chromium'} via playwright-core: the repository served on 127.0.0.1 with COOP/COEP, web/browser.js's \`loadFavor\` in a dedicated module Worker). ${e0.inputBytes ? `The inputs (${(e0.inputBytes / MiB).toFixed(0)} MiB) are made in JS and copied into the wasm heap for each call. ` : ''}The wasm heap starts at ${((e0.heapBeforeBytes ?? 0) / MiB).toFixed(0)} MiB and only grows, so the heap after the causal run is the peak; the target is a peak under ${maxHeapMiB} MiB (1.5 GB).`);
    md.push('');
    md.push('| where | build | variant | time | output | wasm heap after | process RSS after |');
    md.push('|---|---|---|---:|---|---:|---:|');
    for (const e of sc) {
      if (e.failed) { md.push(`| ${where(e)} | — | — | — | failed: ${e.failed.replace(/\|/g, '\\|')} | — | — |`); continue; }
      for (const r of e.runs) md.push(`| ${where(e)} | ${e.build ?? 'favor-simd'} | ${variant(r.causal)} | ${r.error ? '—' : `${(r.ms / 1000).toFixed(2)} s`} | ${r.error ? `failed: ${r.error}` : r.finite ? `[${r.dims.join(', ')}], finite` : 'NOT finite'} | ${(r.heapAfterBytes / MiB).toFixed(0)} MiB | ${r.rssAfterMiB === undefined ? '—' : `${r.rssAfterMiB} MiB`} |`);
    }
  }
  md.push('');
  md.push('## Reproduce');
  md.push('');
  md.push('```sh');
  md.push(`npm run bench            # builds dist/ (wasm) and build/bench-native-{sse,native}, then runs everything (${env.minutes.toFixed(0)} min here, plus builds)`);
  md.push('npm run bench -- --quick # L = 256, 1024, 4096 only, no scale test, shorter crossover probes; writes build/bench-quick/');
  md.push('node bench/run.mjs --no-peers --no-native --no-scale --sizes 4096   # ours alone, then the crossovers (--no-crossover: without)');
  md.push('node bench/scale.mjs --threads 1          # the scale test alone, in Node (--threads 2: the pthreads build)');
  md.push('node bench/scale-browser.mjs --threads 1  # the same in headless Chromium (--no-isolation: without COOP/COEP)');
  md.push('node bench/packed.mjs                    # the model runner with its weights packed once (favor.packMatrix) and without');
  md.push('$(scripts/ensure-node.sh 22) bench/node-peers.mjs   # ours and onnxruntime-web side by side in Node 22 (any Node: that one)');
  md.push('node --experimental-websocket bench/browser-peers.mjs [--browser firefox]   # the same in a Chromium (Firefox) page');
  md.push('/usr/bin/python3 bench/onnx/generate.py   # regenerate the ONNX graphs (needs apt-get install python3-onnx)');
  md.push('```');
  md.push('');
  md.push(`Raw numbers (every timed call): \`${path.relative(path.dirname(outFile), resultsFile).split(path.sep).join('/')}\`.`);
  md.push('');
  mkdirSync(path.dirname(outFile), { recursive: true });
  writeFileSync(outFile, md.join('\n'));
}
