#!/usr/bin/env node
// Ours against onnxruntime-web where web apps run them (issue 16): a page of headless Chromium,
// cross-origin isolated, that imports web/browser.js as an app would (loadFavor({ threads: 1 }):
// the relaxed-SIMD build where Chromium validates it) and onnxruntime-web's ESM build (wasm
// backend, numThreads 1) with the graphs of bench/onnx. The main tables run in Node 22, whose V8
// is older than Chromium's and compiles the same wasm differently: this section is the check in
// the engine users have. Exact attention and FAVOR+ (positive, orthogonal, m = 256, seed 42, the
// same W for both), bidirectional and causal, one head, d = dv = 64, inputs N(0, 0.5²) from the
// main tables' seeds; beside them our plain SIMD build (loadFavor({ simd: 'fixed' })), so that the
// relaxed build's gain over it is also measured where users run it. Outputs are compared first
// (relative Frobenius ≤ 1e-3); then rounds that call the three in rotating order. Writes its section into BENCHMARKS.md (between <!-- browser -->
// markers) or --out FILE, and bench/browser-results.json.
//
//   node bench/browser-peers.mjs [--quick] [--out FILE.md]
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { fmtL, fmtMs, fmtRatio } from './lib/format.mjs';
import { writeSection } from './lib/sections.mjs';
import { CHROMIUM, CHROMIUM_ARGS, serveRepo } from './lib/serve-repo.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const options = { sizes: args.quick ? [1024] : [1024, 4096], rounds: args.quick ? 5 : 11, d: 64, m: 256, sigma: 0.5, seed: 42 };
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';

// The server does not serve node_modules (pages load our package from web/ and dist/, as a
// user's server would): onnxruntime-web's ESM build and its wasm are served from memory.
const ortDir = path.join(repo, 'node_modules', 'onnxruntime-web');
const ortVersion = JSON.parse(readFileSync(path.join(ortDir, 'package.json'), 'utf8')).version;
const types = { mjs: 'text/javascript', wasm: 'application/wasm' };
const pages = { '/__peers/': ['text/html', '<!doctype html><meta charset="utf-8"><title>favor-attention and onnxruntime-web</title>'] };
for (const file of readdirSync(path.join(ortDir, 'dist')).filter((f) => /^ort\.wasm\.min\.mjs$|^ort-wasm-simd-threaded\.(mjs|wasm)$/.test(f)))
  pages[`/__ort/${file}`] = [types[file.split('.').pop()], readFileSync(path.join(ortDir, 'dist', file))];

const server = await serveRepo({ isolated: true, pages });
const { chromium } = await import('playwright-core');
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
// One page per case: each library starts from a fresh heap (after exact attention at L = 4096,
// onnxruntime-web's heap holds its 64 MiB score matrix, and its FAVOR+ graph then ran 2x slower).
const cases = options.sizes.flatMap((L) => ['exact', 'favor'].flatMap((kind) => [false, true].map((causal) => ({ L, kind, causal }))));
const rows = [];
let info, plainInfo, isolated, version;
try {
  for (const c of cases) {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); else console.error(`  chromium: ${msg.text()}`); });
    await page.goto(`${server.base}/__peers/`);
    const out = await page.evaluate(async ({ o, c }) => {
      const ort = await import('/__ort/ort.wasm.min.mjs');
      Object.assign(ort.env.wasm, { numThreads: 1, wasmPaths: '/__ort/' });
      ort.env.logLevel = 'error';
      const { gaussian, difference, median } = await import('/bench/lib/inputs.mjs');
      const { loadFavor } = await import('/web/browser.js');
      const favor = await loadFavor({ threads: 1 }), plain = await loadFavor({ threads: 1, simd: 'fixed' });
      const mapOf = (f) => f.createFeatureMap({ dim: o.d, features: o.m, kernel: 'positive', sampling: 'orthogonal', seed: o.seed });
      const map = mapOf(favor), plainMap = mapOf(plain);
      const { L, kind, causal } = c, dims = [L, o.d];
      const q = gaussian(L * o.d, 3 * L + 1, o.sigma), k = gaussian(L * o.d, 3 * L + 2, o.sigma), v = gaussian(L * o.d, 3 * L + 3, o.sigma);
      const t = (data, shape) => new ort.Tensor('float32', data, shape);
      const graph = await (await fetch(`/bench/onnx/${kind}-${causal ? 'causal' : 'bidirectional'}.onnx`)).arrayBuffer();
      const session = await ort.InferenceSession.create(new Uint8Array(graph), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
      const feeds = { q: t(q, dims), k: t(k, dims), v: t(v, dims), ...(kind === 'favor' && { w: t(map.projection.data, [o.m, o.d]) }) };
      const run = (f, fm) => () => (kind === 'favor'
        ? f.favorAttention({ data: q, dims }, { data: k, dims }, { data: v, dims }, { featureMap: fm, causal })
        : f.exactAttention({ data: q, dims }, { data: k, dims }, { data: v, dims }, { causal })).data;
      const ours = run(favor, map), ownPlain = run(plain, plainMap);
      const peer = async () => (await session.run(feeds)).out.data;
      const reference = await peer();
      const { rel } = difference(reference, ours()), relPlain = difference(reference, ownPlain()).rel;
      const base = { info: favor.info, plainInfo: plain.info, isolated: crossOriginIsolated, rel, relPlain };
      if (!(rel <= 1e-3 && relPlain <= 1e-3)) return { ...base, status: `outputs differ (relative ${rel.toExponential(1)}, plain build ${relPlain.toExponential(1)})` };
      // Warm-up: Chromium tiers wasm up from its baseline compiler while it runs: a few calls of each.
      for (let i = 0, t0 = performance.now(); i < 3 || performance.now() - t0 < 500; ++i) ours(), ownPlain(), await peer();
      const ms = { ours: [], plain: [], peer: [] }, ratios = [], plainRatios = [];
      const timed = async (name, fn) => { const t0 = performance.now(); await fn(); ms[name].push(performance.now() - t0); };
      const order = [['ours', ours], ['plain', ownPlain], ['peer', peer]];
      for (let r = 0; r < o.rounds; r++) {
        for (let i = 0; i < 3; ++i) await timed(...order[(i + r) % 3]);
        ratios.push(ms.peer[r] / ms.ours[r]), plainRatios.push(ms.plain[r] / ms.ours[r]);
      }
      return { ...base, status: 'ok', ours: median(ms.ours), plain: median(ms.plain), peer: median(ms.peer), ratio: median(ratios), plainRatio: median(plainRatios) };
    }, { o: options, c });
    await page.close();
    if (problems.length) throw new Error(problems.join(' | '));
    ({ info, plainInfo, isolated } = out);
    rows.push({ ...c, status: out.status, rel: out.rel, relPlain: out.relPlain, ours: out.ours, plain: out.plain, peer: out.peer, ratio: out.ratio, plainRatio: out.plainRatio });
    console.error(`  chromium: ${c.kind} ${c.causal ? 'causal' : 'bidirectional'} L = ${c.L}: ${out.status === 'ok' ? `ours ${out.ours.toFixed(2)} ms, plain build ${out.plain.toFixed(2)} ms, onnxruntime-web ${out.peer.toFixed(2)} ms` : out.status}`);
  }
  version = `Chromium ${browser.version()}`;
} finally {
  await browser.close();
  await server.close();
}
const result = { browser: version, crossOriginIsolated: isolated, info, plainInfo, rows };

const build = info.relaxedSimd ? 'relaxed SIMD' : info.simd ? 'SIMD' : 'scalar';
const md = [];
md.push('<!-- browser -->');
md.push('## Ours and onnxruntime-web in Chromium (issue 16)');
md.push('');
md.push(`\`node bench/browser-peers.mjs\`${args.quick ? ' --quick' : ''}, ${new Date().toISOString().slice(0, 10)}, ${cpu}, ${result.browser}, a cross-origin isolated page (${result.crossOriginIsolated ? 'confirmed' : 'NOT isolated'}). ` +
  `Ours: \`loadFavor({ threads: 1 })\` from web/browser.js, the ${build} build, 1 thread, ${info.tileRows}-row GEMM tiles (tileRows 'auto'); beside it our plain SIMD build, \`loadFavor({ threads: 1, simd: 'fixed' })\` (${plainInfo.tileRows}-row tiles: 'auto' gives 6 rows to the relaxed build only). onnxruntime-web ${ortVersion}: its ESM wasm build, \`env.wasm.numThreads = 1\`, the graphs of bench/onnx (as in the main tables). ` +
  `One head, d = dv = ${options.d}, inputs N(0, ${options.sigma}²) from the main tables' seeds; FAVOR+ positive orthogonal m = ${options.m}, seed ${options.seed}, the same W for both. ` +
  `Outputs compared first (relative Frobenius ≤ 1e-3); then ${options.rounds} rounds calling the three in rotating order. Cells: median ms; ratios: the median of the per-round ratios (> 1: ours faster). ` +
  'The main tables run in Node 22, whose V8 is older than Chromium\'s: this is the same comparison in the engine users have.');
md.push('');
md.push(`| kernel | L | ours | onnxruntime-web | onnxruntime-web ÷ ours | ours, plain SIMD build | plain ÷ ${build} |`);
md.push('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const name = `${r.kind === 'favor' ? 'FAVOR+' : 'exact'}, ${r.causal ? 'causal' : 'bidirectional'}`;
  md.push(r.status === 'ok'
    ? `| ${name} | ${fmtL(r.L)} | ${fmtMs(r.ours)} ms | ${fmtMs(r.peer)} ms | ${fmtRatio(r.ratio)}× | ${fmtMs(r.plain)} ms | ${fmtRatio(r.plainRatio)}× |`
    : `| ${name} | ${fmtL(r.L)} | — | — | ${r.status} | — | — |`);
}
if (info.relaxedSimd) {
  const at = (kind) => rows.find((r) => r.L === 4096 && r.kind === kind && !r.causal && r.status === 'ok');
  const verdicts = [['favor', 'FAVOR+', 2, 1.2], ['exact', 'Exact attention', 1.5, 1.15]].map(([kind, name, vsOrt, vsPlain]) => {
    const r = at(kind);
    return r ? `${name} at L = 4,096: ${fmtRatio(r.ratio)}× onnxruntime-web (target ${vsOrt}×: **${r.ratio >= vsOrt ? 'PASS' : 'FAIL'}**), ${fmtRatio(r.plainRatio)}× our plain SIMD build (target ${vsPlain}×: **${r.plainRatio >= vsPlain ? 'PASS' : 'FAIL'}**)` : `${name} at L = 4,096: not measured`;
  });
  md.push('');
  md.push(`Issue 16's targets read in this engine (bidirectional, 1 thread): ${verdicts.join('; ')}.`);
}
md.push('<!-- /browser -->');
const section = md.join('\n');

const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, 'browser', section);
if (path.resolve(outFile) === path.resolve(`${repo}BENCHMARKS.md`)) {
  writeFileSync(`${repo}bench/browser-results.json`, `${JSON.stringify({ cpu, options, ortVersion, ...result }, null, 1)}\n`);
}
console.log(section);
