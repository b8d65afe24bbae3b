// One case of the side-by-side peers sections (bench/browser-peers.mjs in a Chromium page,
// bench/node-peers.mjs in a newer Node): our default build (loadFavor({ threads: 1 }): the
// relaxed-SIMD build where the engine has it; also with options.out, writing into one array
// instead of a fresh one per call), our plain SIMD build (simd: 'fixed') and
// onnxruntime-web (wasm backend, one thread) with the graphs of bench/onnx, on one head, inputs
// N(0, sigma²) from the main tables' seeds, FAVOR+ positive orthogonal with the same W for all.
// Outputs are compared first (relative Frobenius <= 1e-3 against onnxruntime-web), and whether
// onnxruntime-web fills an output tensor given to run() (its counterpart of `out`); then rounds
// that call the four in rotating order. Runs in either engine: everything it needs comes in.
//   env: { ort, loadFavor, gaussian, difference, median, graph(name) -> ArrayBuffer }
//   o:   { d, m, sigma, seed, rounds }     c: { L, kind: 'exact' | 'favor', causal }
export async function measureCase(env, o, c) {
  const { ort, loadFavor, gaussian, difference, median } = env;
  const favor = await loadFavor({ threads: 1 }), plain = await loadFavor({ threads: 1, simd: 'fixed' });
  try {
    const mapOf = (f) => f.createFeatureMap({ dim: o.d, features: o.m, kernel: 'positive', sampling: 'orthogonal', seed: o.seed });
    const map = mapOf(favor), plainMap = mapOf(plain);
    const { L, kind, causal } = c, dims = [L, o.d];
    const q = gaussian(L * o.d, 3 * L + 1, o.sigma), k = gaussian(L * o.d, 3 * L + 2, o.sigma), v = gaussian(L * o.d, 3 * L + 3, o.sigma);
    const t = (data, shape) => new ort.Tensor('float32', data, shape);
    const session = await ort.InferenceSession.create(new Uint8Array(await env.graph(`${kind}-${causal ? 'causal' : 'bidirectional'}`)),
      { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    const feeds = { q: t(q, dims), k: t(k, dims), v: t(v, dims), ...(kind === 'favor' && { w: t(map.projection.data, [o.m, o.d]) }) };
    const run = (f, fm, out) => () => (kind === 'favor'
      ? f.favorAttention({ data: q, dims }, { data: k, dims }, { data: v, dims }, { featureMap: fm, causal, out })
      : f.exactAttention({ data: q, dims }, { data: k, dims }, { data: v, dims }, { causal, out })).data;
    const ours = run(favor, map), ownPlain = run(plain, plainMap), oursOut = run(favor, map, new Float32Array(L * o.d));
    const peer = async () => (await session.run(feeds)).out.data;
    const reference = await peer();
    const { rel } = difference(reference, ours()), relPlain = difference(reference, ownPlain()).rel;
    // onnxruntime-web's counterpart of `out`: an output tensor given to run() (io-binding's CPU form).
    const given = t(new Float32Array(L * o.d), dims);
    const bound = (await session.run(feeds, { out: given })).out;
    const peerOut = { returnsGiven: bound === given, rel: difference(given.data, reference).rel };
    const base = { info: favor.info, plainInfo: plain.info, rel, relPlain, peerOut };
    if (!(rel <= 1e-3 && relPlain <= 1e-3)) return { ...base, status: `outputs differ (relative ${rel.toExponential(1)}, plain build ${relPlain.toExponential(1)})` };
    // Warm-up: engines tier wasm up from their baseline compilers while it runs: a few calls of each.
    if (difference(ours(), oursOut()).rel !== 0) return { ...base, status: 'the output written into out differs from the fresh one' };
    for (let i = 0, t0 = performance.now(); i < 3 || performance.now() - t0 < 500; ++i) ours(), oursOut(), ownPlain(), await peer();
    const ms = { ours: [], out: [], plain: [], peer: [] }, ratios = [], outRatios = [], plainRatios = [];
    const timed = async (name, fn) => { const t0 = performance.now(); await fn(); ms[name].push(performance.now() - t0); };
    const order = [['ours', ours], ['plain', ownPlain], ['out', oursOut], ['peer', peer]];
    for (let r = 0; r < o.rounds; r++) {
      for (let i = 0; i < order.length; ++i) await timed(...order[(i + r) % order.length]);
      ratios.push(ms.peer[r] / ms.ours[r]), outRatios.push(ms.peer[r] / ms.out[r]), plainRatios.push(ms.plain[r] / ms.ours[r]);
    }
    await session.release?.();
    return {
      ...base, status: 'ok', ours: median(ms.ours), out: median(ms.out), plain: median(ms.plain), peer: median(ms.peer),
      ratio: median(ratios), outRatio: median(outRatios), plainRatio: median(plainRatios),
      ratioQuartiles: quartiles(ratios), outRatioQuartiles: quartiles(outRatios),
    };
  } finally {
    favor.dispose?.();
    plain.dispose?.();
  }
}

// The lower and upper quartiles of xs (linear between order statistics): the spread of the
// per-round ratios, beside their median, so that a verdict that sits inside it reads as one.
export function quartiles(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p) => {
    const x = p * (s.length - 1), i = Math.floor(x);
    return i + 1 < s.length ? s[i] + (x - i) * (s[i + 1] - s[i]) : s[i];
  };
  return [at(0.25), at(0.75)];
}

// A case's row of the section (what results.json keeps) and its line in the log.
export const caseRow = (c, out) => ({
  ...c, status: out.status, rel: out.rel, relPlain: out.relPlain, peerOut: out.peerOut, ours: out.ours, out: out.out, plain: out.plain, peer: out.peer,
  ratio: out.ratio, outRatio: out.outRatio, plainRatio: out.plainRatio,
  ratioQuartiles: out.ratioQuartiles, outRatioQuartiles: out.outRatioQuartiles,
});
export const caseLine = (c, out) => `${c.kind} ${c.causal ? 'causal' : 'bidirectional'} L = ${c.L}: ${out.status === 'ok'
  ? `ours ${out.ours.toFixed(2)} ms (with out ${out.out.toFixed(2)}), plain build ${out.plain.toFixed(2)} ms, onnxruntime-web ${out.peer.toFixed(2)} ms` : out.status}`;
export const buildName = (info) => (info.relaxedSimd ? 'relaxed SIMD' : info.simd ? 'SIMD' : 'scalar');

// The cases of a section: exact and FAVOR+, bidirectional and causal, at each L.
export const peerCases = (sizes) => sizes.flatMap((L) => ['exact', 'favor'].flatMap((kind) => [false, true].map((causal) => ({ L, kind, causal }))));

// The section's table and the speed targets (against onnxruntime-web and the plain SIMD build)
// read in its engine (Markdown lines).
export function peersTable(rows, info, { fmtL, fmtMs, fmtRatio }) {
  const build = buildName(info);
  const md = [`| kernel | L | ours | onnxruntime-web | onnxruntime-web ÷ ours | ours, \`out\` given | onnxruntime-web ÷ ours with \`out\` | ours, plain SIMD build | plain ÷ ${build} |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|'];
  for (const r of rows) {
    const name = `${r.kind === 'favor' ? 'FAVOR+' : 'exact'}, ${r.causal ? 'causal' : 'bidirectional'}`;
    md.push(r.status === 'ok'
      ? `| ${name} | ${fmtL(r.L)} | ${fmtMs(r.ours)} ms | ${fmtMs(r.peer)} ms | ${fmtRatio(r.ratio)}× | ${fmtMs(r.out)} ms | ${fmtRatio(r.outRatio)}× | ${fmtMs(r.plain)} ms | ${fmtRatio(r.plainRatio)}× |`
      : `| ${name} | ${fmtL(r.L)} | — | — | ${r.status} | — | — | — | — |`);
  }
  const given = rows.find((r) => r.peerOut)?.peerOut;
  if (given) {
    md.push('', given.rel <= 1e-6
      ? `onnxruntime-web given an output tensor to write into (\`session.run(feeds, { out: tensor })\`, its counterpart of \`out\`) fills it correctly here (relative difference ${given.rel.toExponential(1)}); it is not timed yet.`
      : `onnxruntime-web given an output tensor to write into (\`session.run(feeds, { out: tensor })\`, its counterpart of \`out\`) ${given.returnsGiven ? 'returns that tensor' : 'returns another tensor'} with the given array unchanged (relative difference to its own output ${given.rel.toFixed(2)}: the zeros it was given; microsoft/onnxruntime#25786), so the \`out\` columns have no like-for-like peer.`);
  }
  if (info.relaxedSimd) {
    const at = (kind) => rows.find((r) => r.L === 4096 && r.kind === kind && !r.causal && r.status === 'ok');
    const verdicts = [['favor', 'FAVOR+', 2, 1.2], ['exact', 'Exact attention', 1.5, 1.15]].map(([kind, name, vsOrt, vsPlain]) => {
      const r = at(kind);
      const spread = (q) => (q ? `, rounds ${fmtRatio(q[0])}–${fmtRatio(q[1])}` : '');
      return r ? `${name} at L = 4,096: ${fmtRatio(r.ratio)}× onnxruntime-web (target ${vsOrt}×: **${r.ratio >= vsOrt ? 'PASS' : 'FAIL'}**${spread(r.ratioQuartiles)}; ${fmtRatio(r.outRatio)}× with \`out\`${spread(r.outRatioQuartiles)}), ${fmtRatio(r.plainRatio)}× our plain SIMD build (target ${vsPlain}×: **${r.plainRatio >= vsPlain ? 'PASS' : 'FAIL'}**)` : `${name} at L = 4,096: not measured`;
    });
    md.push('', `The speed targets against onnxruntime-web and the plain SIMD build, read in this engine (bidirectional, 1 thread; the verdicts on the calls that return a fresh array, as onnxruntime-web's do; "rounds": the middle half of the per-round ratios, whose median is the verdict's figure): ${verdicts.join('; ')}.`);
  }
  return md;
}
