// The speed, scale and threading targets, judged from bench/run.mjs's results: each with a
// stable id, its wording, the measured text of BENCHMARKS.md's table, a verdict, and a short
// headline (the figure the per-CPU table shows).
import { fmtL, fmtMs, fmtRatio, resultsView, variant } from './format.mjs';

const MiB = 2 ** 20;

// The scale test's runs: one entry per fresh process (Node, Chromium; 1 and 2 threads; results
// saved before the browser run existed hold one Node object), null when it did not run.
export function scaleRuns(data) {
  const sc = data.scale && (Array.isArray(data.scale) ? data.scale : [{ environment: 'node', threads: 1, ...data.scale }]);
  return {
    sc,
    maxHeapMiB: data.config.scaleMaxHeapMiB ?? 1536,
    where: (e) => `${e.environment === 'chromium' ? 'Chromium' : 'Node'}, ${e.threads ?? '?'} thread${e.threads === 1 ? '' : 's'}`,
    peakMiB: (e) => Math.max(e.peakHeapBytes ?? 0, ...e.runs.map((r) => r.heapAfterBytes)) / MiB,
  };
}

export function judgeTargets(data) {
  const { environment: env, config, methods } = data;
  const { get, ms, pairedJobs, paired, ceilingOf } = resultsView(data);
  const has = (id) => methods.some((m) => m.id === id);
  const targets = [];
  const add = (id, name, measured, verdict, headline) => targets.push({ id, name, measured, verdict, headline: headline ?? null });
  const verdict = (ok) => (ok === null ? 'NOT MEASURED' : ok ? 'PASS' : 'FAIL');
  const times = (r) => (r === null ? null : `${fmtRatio(r)}×`);
  // Our reference build's ceiling (bench/lib/ceiling.mjs): what fraction of it a rate is.
  const top = ceilingOf('ours')?.value ?? null;
  const topName = ceilingOf('ours')?.key ?? 'wasm';
  const ofTop = (gflops) => (top ? ` = ${Math.round((100 * gflops) / top)}% of the ${topName} ceiling ${top.toFixed(1)} GFLOP/s` : '');
  const rate = (method, kind, causal, L) => get(method, kind, causal, L)?.gflops ?? null;
  {
    const r = paired('ort', 'ours', 'favor', false, 4096);
    // 2× means running the same flops in half of ort's time: the rate that takes, against the ceiling.
    const ortRate = rate('ort', 'favor', false, 4096), ourRate = rate('ours', 'favor', false, 4096);
    const need = r === null || ortRate === null || ourRate === null ? ''
      : `; 2× needs ${(2 * ortRate).toFixed(1)} GFLOP/s end to end (exponentials not counted)${ofTop(2 * ortRate)}; ours runs at ${ourRate.toFixed(1)} GFLOP/s${top ? ` (${Math.round((100 * ourRate) / top)}%)` : ''}, ort at ${ortRate.toFixed(1)}` +
        (env.tileRows !== 6 && env.ceiling?.relaxed8 ? `; this engine runs the ${env.tileRows}-row GEMM tile (its V8 spills the 6-row one), whose 8 accumulators reach at most ${env.ceiling.relaxed8.toFixed(1)} GFLOP/s (the ceiling loop with 8 chains)` : '');
    add('favor-vs-ort', 'FAVOR+ bidirectional ≥ 2× faster than onnxruntime-web at L = 4096, d = 64, m = 256',
      r === null ? 'not measured' : `${fmtRatio(r)}× (medians: ort ${fmtMs(ms('ort', 'favor', false, 4096))} ms, ours ${fmtMs(ms('ours', 'favor', false, 4096))} ms)${need}`,
      verdict(r === null ? null : r >= 2), times(r));
  }
  {
    const r = paired('ort', 'ours', 'exact', false, 4096);
    const rc = paired('ort', 'ours', 'exact', true, 4096);
    add('exact-vs-ort', 'Exact attention ≥ 1.5× faster than onnxruntime-web at L = 4096 (bidirectional; 1.2× before the relaxed-SIMD build)',
      r === null ? 'not measured' : `${fmtRatio(r)}× (medians: ort ${fmtMs(ms('ort', 'exact', false, 4096))} ms, ours ${fmtMs(ms('ours', 'exact', false, 4096))} ms)${rc !== null ? `; causal: ${fmtRatio(rc)}×` : ''}`,
      verdict(r === null ? null : r >= 1.5), times(r));
  }
  // The relaxed-SIMD build against its plain SIMD twin (the 'plain' row exists only when 'ours'
  // is the relaxed build), with the ceilings' own ratio: how much the fused instruction can give here.
  for (const [kind, name, need] of [['favor', 'FAVOR+', 1.2], ['exact', 'Exact attention', 1.15]]) {
    const r = paired('plain', 'ours', kind, false, 4096);
    const c = env.ceiling?.relaxed && env.ceiling?.wasm ? env.ceiling.relaxed / env.ceiling.wasm : null;
    const rc = paired('plain', 'ours', kind, true, 4096);
    add(`${kind}-relaxed-vs-plain`, `${name} in the relaxed-SIMD build ≥ ${need}× faster than in the plain SIMD build at L = 4096, 1 thread (bidirectional)`,
      !has('plain') ? 'not measured (this engine has no relaxed SIMD: run under Node ≥ 22, as bench/run.sh does)'
        : r === null ? 'not measured'
          : `${fmtRatio(r)}× (medians: plain ${fmtMs(ms('plain', kind, false, 4096))} ms, relaxed ${fmtMs(ms('ours', kind, false, 4096))} ms)${rc !== null ? `; causal: ${fmtRatio(rc)}×` : ''}${c ? `; on this CPU the fused ceiling is ${fmtRatio(c)}× the separate one, the most a kernel at the same fraction of its ceiling can gain` : ''}`,
      verdict(r === null ? null : r >= need), times(r));
  }
  {
    const all = config.sizes.map((L) => [L, pairedJobs('ours', 'favor', true, 'ours', 'favor', false, L)]).filter((p) => p[1] !== null);
    const pairs = all.filter((p) => p[0] >= 1024);
    const worst = pairs.reduce((w, p) => (!w || p[1] > w[1] ? p : w), null);
    const at4096 = pairs.find((p) => p[0] === 4096);
    const small = all.filter((p) => p[0] < 1024);
    add('causal-vs-bidirectional', 'Causal FAVOR+ within 1.5× of bidirectional FAVOR+ (ours, wasm; causal time / bidirectional time at every measured L ≥ 1024)',
      worst ? `${at4096 ? `${fmtRatio(at4096[1])}× at L = 4096, ` : ''}worst ${fmtRatio(worst[1])}× at L = ${fmtL(worst[0])}, best ${fmtRatio(Math.min(...pairs.map((p) => p[1])))}×${small.length ? `; below 1024: ${small.map((p) => `${fmtRatio(p[1])}× at ${fmtL(p[0])}`).join(', ')}` : ''}` : 'not measured',
      verdict(worst ? worst[1] <= 1.5 : null), worst ? `worst ${fmtRatio(worst[1])}×` : null);
  }
  // FAVOR+ against our exact attention: no target; the crossovers have a section of their own.
  {
    const parts = [];
    let all = true, any = false, worstAll = null;
    for (const kind of ['exact', 'favor']) {
      for (const causal of [false, true]) {
        const pairs = config.sizes.filter((L) => L >= 1024).map((L) => [L, paired('ours', 'sse', kind, causal, L)]).filter((p) => p[1] !== null);
        if (!pairs.length) { parts.push(`${kind} ${variant(causal)}: not measured`); all = false; continue; }
        any = true;
        const worst = pairs.reduce((w, p) => (p[1] > w[1] ? p : w));
        const at = pairs.find((p) => p[0] === 4096);
        if (worst[1] > 1.5) all = false;
        worstAll = Math.max(worstAll ?? 0, worst[1]);
        parts.push(`${kind === 'exact' ? 'exact' : 'FAVOR+'} ${variant(causal)}: ${at ? `${fmtRatio(at[1])}× at 4096, ` : ''}worst ${fmtRatio(worst[1])}× (L = ${fmtL(worst[0])})`);
      }
    }
    add('wasm-vs-native', 'wasm SIMD within 1.5× of the native build for 128-bit SSE only (-O3 -msse4.2 -mno-avx), kernel for kernel (wasm time / native time, every measured L ≥ 1024)',
      parts.join('; '), verdict(any ? all : null), worstAll === null ? null : `worst ${fmtRatio(worstAll)}×`);
  }
  {
    // Speed-up = 1-thread time / 2-thread time, paired within rounds like every other ratio.
    const speedup = (kind, causal) => { const r = pairedJobs('ours2', kind, causal, 'ours', kind, causal, 16384); return r === null ? null : 1 / r; };
    const r = speedup('exact', false);
    const others = [['exact causal', 'exact', true], ['FAVOR+', 'favor', false], ['FAVOR+ causal', 'favor', true]]
      .map(([name, kind, causal]) => [name, speedup(kind, causal)]).filter((p) => p[1] !== null);
    add('threads', 'Threads ≥ 1.7× on 2 threads at L = 16384 (exact attention, bidirectional; wasm 1-thread time / 2-thread time)',
      !has('ours2') ? `not available: the threaded build reports ${data.threads} thread(s)`
        : r === null ? 'not measured (L = 16384 not run)'
          : `${fmtRatio(r)}× (medians: 1 thread ${fmtMs(ms('ours', 'exact', false, 16384))} ms, 2 threads ${fmtMs(ms('ours2', 'exact', false, 16384))} ms)${others.map(([n, x]) => `; ${n}: ${fmtRatio(x)}×`).join('')}`,
      has('ours2') ? verdict(r === null ? null : r >= 1.7) : 'NOT AVAILABLE', times(r));
  }
  const { sc, maxHeapMiB, where, peakMiB } = scaleRuns(data);
  const scaleOk = (e) => !e.failed && e.runs.length === 2 && e.runs.every((r) => !r.error && r.finite) && peakMiB(e) < maxHeapMiB;
  if (sc) {
    const text = sc.map((e) => `${where(e)}: ${e.failed ? `failed (${e.failed})`
      : `${e.runs.map((r) => `${variant(r.causal)} ${r.error ? `failed (${r.error})` : `${(r.ms / 1000).toFixed(1)} s${r.finite ? '' : ' (output NOT finite)'}`}`).join(', ')}, peak wasm heap ${peakMiB(e).toFixed(0)} MiB`}`).join('; ');
    const ran = (where) => sc.some((e) => e.environment === where);
    const missing = ['node', 'chromium'].filter((w) => !ran(w)).map((w) => `${w === 'node' ? 'Node' : 'the browser'} was not run`);
    const peaks = sc.filter((e) => !e.failed).map(peakMiB);
    add('scale', `Scale: FAVOR+ bidirectional and causal at L = ${fmtL(sc[0].L)}, d = 64, m = 256 in Node and in the browser, peak wasm heap < ${maxHeapMiB} MiB`,
      (text + missing.map((x) => `; ${x}`).join('')).replace(/\|/g, '\\|'), verdict(missing.length === 0 && sc.every(scaleOk)),
      peaks.length ? `peak ${Math.max(...peaks).toFixed(0)} MiB` : null);
  } else {
    add('scale', 'Scale: FAVOR+ at L = 1,048,576 in Node and in the browser', 'not run (--quick or --no-scale)', 'NOT RUN');
  }
  return targets;
}
