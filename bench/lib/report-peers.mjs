// The section of BENCHMARKS.md on the peers a user would compare besides the graphs we wrote:
// onnxruntime's fused MultiHeadAttention op and ruvector-attention-wasm, from the same results
// as the tables (nothing measured here).
import { fmtL, fmtMs, fmtRatio, variant } from './format.mjs';

export function peersSection(data, view) {
  const { results, config, unavailable } = data;
  const md = [];
  const rows = (id) => results.filter((r) => r.method === id);
  const failure = (r) => `${r.status === 'skip' ? 'not run' : r.status}: ${r.reason}`;
  md.push('## Peers a user would compare');
  md.push('');
  // onnxruntime-web's fused op against the MatMul-Softmax-MatMul graph and ours.
  if (view.method('ortmha')) {
    md.push('**onnxruntime-web, fused `com.microsoft.MultiHeadAttention`** (the op onnxruntime\'s transformer optimizer fuses attention into; CPU kernel in contrib_ops/cpu/bert), exact attention only:');
    md.push('');
    for (const causal of [false, true]) {
      const parts = [];
      for (const r of rows('ortmha').filter((x) => x.kind === 'exact' && x.causal === causal)) {
        // The first failure stops it; the larger sizes repeat it.
        if (r.status !== 'ok') { parts.push(`L = ${fmtL(r.L)}: ${failure(r)}${r.L < config.sizes.at(-1) ? ' (not run at larger L)' : ''}`); break; }
        const g = view.paired('ortmha', 'ort', 'exact', causal, r.L), o = view.paired('ortmha', 'ours', 'exact', causal, r.L);
        parts.push(`L = ${fmtL(r.L)}: ${fmtMs(r.ms)} ms${g !== null ? `, ${fmtRatio(g)}× the graph's time` : ''}${o !== null ? `, ${fmtRatio(o)}× ours` : ''}`);
      }
      if (parts.length) md.push(`- ${variant(causal)}${causal ? ' (attribute unidirectional = 1)' : ''}: ${parts.join('; ')}.`);
    }
    md.push('- Its outputs equal the graph\'s and ours within the tolerance wherever it runs (*Output checks*); where it fails, the failure is onnxruntime\'s own error, kept as it came.');
    md.push('');
  }
  // ruvector-attention-wasm: one query per call.
  const ru = view.method('ruvector');
  const ruMissing = unavailable?.find((u) => u.startsWith('ruvector'));
  if (ru || ruMissing) {
    md.push('**ruvector-attention-wasm** (npm), which advertises "Flash" and "Linear (Performer-style)" attention in wasm. Its classes compute **one query per call** over a JS array of key vectors and one of value vectors (`compute(query: Float32Array, keys, values)`; arrays of plain number arrays or of Float32Array rows are both accepted, the plain arrays convert faster). For L queries a user writes a loop of L calls, each passing all S keys again (causal: `keys.slice(0, i + 1)`); that loop is what is timed. Every call converts its keys and values from JS element by element, so its time grows as L·S even for the linear attention.');
    md.push('');
    if (ruMissing) md.push(`- Not available in this run: ${ruMissing}.`);
    for (const [kind, what] of [['exact', '`WasmFlashAttention` (exact attention by blocks)'], ['favor', '`WasmLinearAttention` (m = ' + config.m + ')']]) {
      for (const causal of [false, true]) {
        const rs = rows('ruvector').filter((r) => r.kind === kind && r.causal === causal);
        if (!rs.length) continue;
        const ok = rs.filter((r) => r.status === 'ok');
        const parts = ok.map((r) => {
          const x = view.paired('ruvector', 'ours', kind, causal, r.L);
          const per = r.ms / r.L;
          const err = r.differs && r.check?.rel != null
            ? `; output error vs exact ${r.check.rel.toFixed(2)} (ours FAVOR+ with m = ${config.m}: ${r.check.oursFavorRel?.toFixed(2) ?? '—'}; a uniform average of the values: ${r.check.uniformRel.toFixed(2)})`
            : r.check ? `; matches ours (relative ${r.check.rel.toExponential(1)})` : '';
          return `L = ${fmtL(r.L)}: ${fmtMs(r.ms)} ms (${fmtMs(per)} ms per query), ${x !== null ? `${fmtRatio(x)}× ours ${kind === 'exact' ? 'exact' : 'FAVOR+'}` : ''}${err}`;
        });
        const stop = rs.find((r) => r.status !== 'ok');
        md.push(`- ${what}, ${variant(causal)}: ${parts.length ? parts.join('; ') : 'no size ran'}${stop ? `; from L = ${fmtL(stop.L)}: ${failure(stop)}` : ''}.`);
      }
    }
    const linear = rows('ruvector').find((r) => r.differs);
    if (linear) md.push(`- Not the same computation as FAVOR+: ${linear.differs}. Its row in the FAVOR+ tables is marked ‡ and is not checked against ours; its error is measured against exact attention instead (relative Frobenius over the L×dv output). The uniform average of the values (every score equal) is a yardstick: at this input scale attention is close to flat, so it lies near exact attention, and an estimate with a larger error is further from exact attention than one that ignores the queries.`);
    md.push('');
  }
  return md;
}
