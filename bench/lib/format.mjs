// Number formats and result look-ups shared by the report's sections.
import { median } from './inputs.mjs';

export const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));
export const fmtRatio = (r) => (r >= 10 ? r.toFixed(1) : r.toFixed(2));
export const fmtL = (L) => L.toLocaleString('en-US');
export const variant = (causal) => (causal ? 'causal' : 'bidirectional');
export const kindName = (kind) => (kind === 'exact' ? 'exact' : 'FAVOR+');

// Look-ups over bench/run.mjs's results.
export function resultsView({ results, methods, environment: env }) {
  const get = (method, kind, causal, L) => results.find((r) => r.method === method && r.kind === kind && r.causal === causal && r.L === L);
  const ms = (method, kind, causal, L) => { const r = get(method, kind, causal, L); return r?.status === 'ok' ? r.ms : null; };
  // Time of job a over time of job b at size L (a job: an implementation and a kernel): the
  // median over rounds of the ratio within a round (both were timed side by side in every
  // round, so load phases that slow a whole round cancel); the ratio of medians otherwise.
  const pairedJobs = (a, kindA, causalA, b, kindB, causalB, L) => {
    const ra = get(a, kindA, causalA, L), rb = get(b, kindB, causalB, L);
    if (ra?.status !== 'ok' || rb?.status !== 'ok') return null;
    if (ra.times?.length !== rb.times?.length || !ra.times.length) return ra.ms / rb.ms;
    return median(ra.times.map((t, i) => t / rb.times[i]));
  };
  const paired = (a, b, kind, causal, L) => pairedJobs(a, kind, causal, b, kind, causal, L);
  const method = (id) => methods.find((m) => m.id === id);
  // The ceiling a method's GFLOP/s are read against: its build's measured ceiling times its
  // threads (default: the wasm ceiling). Results saved before methods named theirs: by id.
  const LEGACY = { ours: ['wasm', 1], ours2: ['wasm', 2], sse: ['sse', 1], avx: [null, 1] };
  const ceilingOf = (id) => {
    const m = method(id);
    if (!m) return null;
    const [key, threads] = m.ceiling === undefined ? (LEGACY[id] ?? ['wasm', 1]) : [m.ceiling, m.threads ?? 1];
    const value = key ? env.ceiling?.[key] : null;
    return value ? { key, value: value * threads, threads } : null;
  };
  return { get, ms, pairedJobs, paired, method, ceilingOf, label: (id) => method(id)?.short ?? id };
}
