// The benchmark's target verdicts (bench/lib/targets.mjs) and their history by CPU
// (bench/lib/cpu-history.mjs) on synthetic results whose ratios are known: the thresholds on
// either side, the paired (per-round) ratios, the CPU names read from /proc/cpuinfo, and an entry
// replaced, not added, when the same CPU runs again.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { cpuIdentity, recordTargets } from '../../bench/lib/cpu-history.mjs';
import { judgeTargets } from '../../bench/lib/targets.mjs';

// Results of one size where each job's per-round times are given (ms).
function results(jobs) {
  return jobs.map(([method, kind, causal, L, times]) => ({
    method, kind, causal, L, status: 'ok', times, ms: [...times].sort((a, b) => a - b)[times.length >> 1], gflops: 1,
  }));
}
function data(jobs) {
  return {
    environment: { date: '2026-11-25T00:00:00Z', commit: 'abc1234', node: 'v26.0.0', ceiling: { wasm: 40, relaxed: 50 }, cpuKey: 'X | Zen 3', cpuName: 'X (Zen 3)', flags: 'avx2' },
    config: { sizes: [4096] },
    methods: ['ours', 'plain', 'ort'].map((id) => ({ id, ceiling: id === 'ours' ? 'relaxed' : 'wasm', threads: 1 })),
    results: results(jobs),
    scale: null,
  };
}
const byId = (targets) => Object.fromEntries(targets.map((t) => [t.id, t]));

test('the onnxruntime-web and relaxed-SIMD targets on either side of their thresholds', () => {
  // Per round: ours 10 ms; ort 20.2 (2.02x, pass) and plain 11.9 (1.19x, fail) for FAVOR+;
  // exact: ort 14.9 against 10 (1.49x, fail), plain 11.6 (1.16x, pass).
  const t = byId(judgeTargets(data([
    ['ours', 'favor', false, 4096, [10, 10, 10]], ['ort', 'favor', false, 4096, [20.2, 20.2, 20.2]], ['plain', 'favor', false, 4096, [11.9, 11.9, 11.9]],
    ['ours', 'exact', false, 4096, [10, 10, 10]], ['ort', 'exact', false, 4096, [14.9, 14.9, 14.9]], ['plain', 'exact', false, 4096, [11.6, 11.6, 11.6]],
  ])));
  assert.equal(t['favor-vs-ort'].verdict, 'PASS');
  assert.equal(t['favor-vs-ort'].headline, '2.02×');
  assert.equal(t['favor-relaxed-vs-plain'].verdict, 'FAIL');
  assert.equal(t['favor-relaxed-vs-plain'].headline, '1.19×');
  assert.equal(t['exact-vs-ort'].verdict, 'FAIL');
  assert.equal(t['exact-relaxed-vs-plain'].verdict, 'PASS');
  assert.match(t['favor-relaxed-vs-plain'].measured, /fused ceiling is 1\.25× the separate one/);
  // Not run: no verdict either way.
  assert.equal(t.threads.verdict, 'NOT AVAILABLE');
  assert.equal(t.scale.verdict, 'NOT RUN');
});

test('ratios are the median of per-round ratios, not the ratio of medians', () => {
  // Rounds: ours 10, 20, 30 and ort 21, 30, 63 -> ratios 2.1, 1.5, 2.1, median 2.1 (pass); the
  // medians alone (30 / 20 = 1.5) would fail.
  const t = byId(judgeTargets(data([
    ['ours', 'favor', false, 4096, [10, 20, 30]], ['ort', 'favor', false, 4096, [21, 30, 63]],
  ])));
  assert.equal(t['favor-vs-ort'].headline, '2.10×');
  assert.equal(t['favor-vs-ort'].verdict, 'PASS');
  // Without the plain build's row the relaxed targets say why they were not measured.
  assert.equal(t['exact-relaxed-vs-plain'].verdict, 'NOT MEASURED');
});

test('CPU names from /proc/cpuinfo: AMD families by core, others by family and model', () => {
  const cpuinfo = (vendor, family, model, name = 'AMD EPYC') =>
    `processor\t: 0\nvendor_id\t: ${vendor}\ncpu family\t: ${family}\nmodel\t\t: ${model}\nmodel name\t: ${name}\nflags\t\t: fpu sse4_2 avx avx2 fma\n`;
  assert.deepEqual(cpuIdentity(cpuinfo('AuthenticAMD', 25, 1)), { key: 'AMD EPYC | Zen 3', name: 'AMD EPYC (Zen 3), family 25, model 1', flags: 'sse4_2 avx avx2 fma' });
  assert.equal(cpuIdentity(cpuinfo('AuthenticAMD', 25, 17)).key, 'AMD EPYC | Zen 4');
  assert.equal(cpuIdentity(cpuinfo('AuthenticAMD', 26, 2)).key, 'AMD EPYC | Zen 5');
  const intel = cpuIdentity(cpuinfo('GenuineIntel', 6, 143, 'Intel(R) Xeon(R) Platinum 8480+'));
  assert.equal(intel.key, 'Intel(R) Xeon(R) Platinum 8480+ | family 6, model 143');
  assert.equal(intel.name, 'Intel(R) Xeon(R) Platinum 8480+, family 6, model 143');
});

test('the history keeps one entry per CPU and is written only when asked', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'favor-targets-'));
  try {
    const file = path.join(dir, 'targets-by-cpu.json');
    const run = (key, ratio) => {
      const d = data([['ours', 'favor', false, 4096, [10]], ['ort', 'favor', false, 4096, [10 * ratio]]]);
      d.environment.cpuKey = key;
      return [d, judgeTargets(d)];
    };
    assert.equal(recordTargets(file, ...run('A | Zen 3', 2.5), { write: false }).length, 1);
    assert.equal(existsSync(file), false);
    recordTargets(file, ...run('B | Zen 5', 1.9), { write: true });
    recordTargets(file, ...run('A | Zen 3', 2.5), { write: true });
    const h = recordTargets(file, ...run('A | Zen 3', 2.2), { write: true });
    assert.deepEqual(h.map((e) => e.key), ['A | Zen 3', 'B | Zen 5']);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(saved, h);
    assert.equal(saved[0].targets.find((x) => x.id === 'favor-vs-ort').headline, '2.20×');
    assert.equal(saved[1].targets.find((x) => x.id === 'favor-vs-ort').verdict, 'FAIL');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
