#!/usr/bin/env node
// Ours against onnxruntime-web where web apps run them: a page of headless Chromium
// (default) or Firefox (--browser firefox: Debian's firefox-esr over WebDriver BiDi,
// scripts/firefox.mjs), cross-origin isolated, that imports web/browser.js as an app would
// (loadFavor({ threads: 1 }): the relaxed-SIMD build where the engine validates it) and
// onnxruntime-web's ESM build (wasm backend, numThreads 1) with the graphs of bench/onnx. The main
// tables run in Node 26: these sections are the check in the engines of browser users. Exact attention and FAVOR+ (positive,
// orthogonal, m = 256, seed 42, the same W for both), bidirectional and causal, one head,
// d = dv = 64, inputs N(0, 0.5²) from the main tables' seeds; beside them our plain SIMD build
// (loadFavor({ simd: 'fixed' })), so that the relaxed build's gain over it is also measured where
// users run it. Outputs are compared first (relative Frobenius ≤ 1e-3); then rounds that call the
// three in rotating order. Writes its section into BENCHMARKS.md (between <!-- browser --> or
// <!-- firefox --> markers) or --out FILE, and bench/browser-results.json or
// firefox-results.json (beside FILE with --out).
//
//   node bench/browser-peers.mjs [--browser chromium|firefox] [--quick] [--out FILE.md]
//   (Firefox needs a global WebSocket: Node >= 22, or Node 20 with --experimental-websocket.)
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import * as format from './lib/format.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';
import { buildName, caseLine, caseRow, peerCases, peersTable } from './lib/side-by-side.mjs';
import { CHROMIUM, CHROMIUM_ARGS, ortPages, serveRepo } from './lib/serve-repo.mjs';
import { launchFirefox } from '../scripts/firefox.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: {
  quick: { type: 'boolean', default: false }, out: { type: 'string' }, browser: { type: 'string', default: 'chromium' },
} });
const ENGINES = {
  chromium: { name: 'Chromium', marker: 'browser', results: 'browser-results.json' },
  firefox: { name: 'Firefox', marker: 'firefox', results: 'firefox-results.json' },
};
const engine = ENGINES[args.browser];
if (!engine) throw new RangeError(`--browser: expected chromium or firefox, got '${args.browser}'`);
const options = { sizes: args.quick ? [1024] : [1024, 4096], rounds: args.quick ? 5 : 11, d: 64, m: 256, sigma: 0.5, seed: 42 };
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';

// The server does not serve node_modules (pages load our package from web/ and dist/, as a
// user's server would): onnxruntime-web's ESM build and its wasm are served from memory.
const ortDir = path.join(repo, 'node_modules', 'onnxruntime-web');
const ortVersion = JSON.parse(readFileSync(path.join(ortDir, 'package.json'), 'utf8')).version;
const pages = { '/__peers/': ['text/html', '<!doctype html><meta charset="utf-8"><title>favor-attention and onnxruntime-web</title>'], ...ortPages() };

const server = await serveRepo({ isolated: true, pages });
const browser = args.browser === 'firefox' ? await launchFirefox()
  : await (await import('playwright-core')).chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
// One page per case: each library starts from a fresh heap (after exact attention at L = 4096,
// onnxruntime-web's heap holds its 64 MiB score matrix, and its FAVOR+ graph then ran 2x slower).
const cases = peerCases(options.sizes);
const rows = [];
let info, plainInfo, isolated, version;
try {
  for (const c of cases) {
    const page = await browser.newPage();
    // Firefox's pages collect their errors themselves (page.errors); Chromium's through events.
    const problems = page.errors ?? [];
    if (!page.errors) {
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); else console.error(`  chromium: ${msg.text()}`); });
    }
    await page.goto(`${server.base}/__peers/`);
    const out = await page.evaluate(async ({ o, c }) => {
      const ort = await import('/__ort/ort.wasm.min.mjs');
      Object.assign(ort.env.wasm, { numThreads: 1, wasmPaths: '/__ort/' });
      ort.env.logLevel = 'error';
      const { gaussian, difference, median } = await import('/bench/lib/inputs.mjs');
      const { measureCase } = await import('/bench/lib/side-by-side.mjs');
      const { loadFavor } = await import('/web/browser.js');
      const graph = async (name) => (await fetch(`/bench/onnx/${name}.onnx`)).arrayBuffer();
      return { ...await measureCase({ ort, loadFavor, gaussian, difference, median, graph }, o, c), isolated: crossOriginIsolated };
    }, { o: options, c });
    await page.close();
    if (problems.length) throw new Error(problems.join(' | '));
    ({ info, plainInfo, isolated } = out);
    rows.push(caseRow(c, out));
    console.error(`  ${args.browser}: ${caseLine(c, out)}`);
  }
  version = `${engine.name} ${browser.version()}`;
} finally {
  await browser.close();
  await server.close();
}
const result = { browser: version, crossOriginIsolated: isolated, info, plainInfo, rows };

const build = buildName(info);
const tiles = info.tileRows === plainInfo.tileRows
  ? `; 'auto' gives 6 rows only to the relaxed build in V8 ≥ 13.6, which keeps their 12 accumulators in registers, else 2 rows × 4 vectors`
  : `: 'auto' gives 6 rows to the relaxed build only`;
const md = [];
md.push(`<!-- ${engine.marker} -->`);
md.push(`## Ours and onnxruntime-web in ${engine.name}`);
md.push('');
md.push(`\`node bench/browser-peers.mjs${args.browser === 'chromium' ? '' : ` --browser ${args.browser}`}\`${args.quick ? ' --quick' : ''}, ${new Date().toISOString().slice(0, 10)}, ${cpu}, ${result.browser}, a cross-origin isolated page (${result.crossOriginIsolated ? 'confirmed' : 'NOT isolated'}). ` +
  `Ours: \`loadFavor({ threads: 1 })\` from web/browser.js, the ${build} build, 1 thread, ${info.tileRows}-row GEMM tiles (tileRows 'auto'), also with \`out\` (the output written into one array given with each call instead of a fresh one); beside it our plain SIMD build, \`loadFavor({ threads: 1, simd: 'fixed' })\` (${plainInfo.tileRows}-row tiles${tiles}). onnxruntime-web ${ortVersion}: its ESM wasm build, \`env.wasm.numThreads = 1\`, the graphs of bench/onnx (as in the main tables). ` +
  `One head, d = dv = ${options.d}, inputs N(0, ${options.sigma}²) from the main tables' seeds; FAVOR+ positive orthogonal m = ${options.m}, seed ${options.seed}, the same W for both. ` +
  `Outputs compared first (relative Frobenius ≤ 1e-3); then ${options.rounds} rounds calling the four in rotating order. Cells: median ms; ratios: the median of the per-round ratios (> 1: ours faster). ` +
  `The main tables run in Node 26: this is the same comparison in ${engine.name}, an engine users have.`);
md.push('');
md.push(...peersTable(rows, info, format));
md.push(`<!-- /${engine.marker} -->`);
const section = md.join('\n');

const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, engine.marker, section);
writeFileSync(resultsFileFor(outFile, engine.results), `${JSON.stringify({ cpu, options, ortVersion, ...result }, null, 1)}\n`);
console.log(section);
