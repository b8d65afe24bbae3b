#!/usr/bin/env node
// The side-by-side of bench/browser-peers.mjs in the Node that runs this script: `npm run bench`
// runs it in Node 22 (scripts/ensure-node.sh 22), in maintenance until 2027-04, whose V8 (12.4)
// compiles the same wasm differently from Node 26's, where the main tables run: it spills 12
// accumulators (tileRows 'auto' gives it 2-row GEMM tiles, Node 26 6 rows).
// Our relaxed and plain SIMD builds and onnxruntime-web (wasm, one thread, the graphs of
// bench/onnx); each case in a child process, so that every library starts from a fresh heap.
// Writes its section into BENCHMARKS.md (between <!-- node --> markers) or --out FILE, and
// bench/node-results.json (beside FILE with --out).
//
//   node bench/node-peers.mjs [--quick] [--out FILE.md]
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import * as format from './lib/format.mjs';
import { difference, gaussian, median } from './lib/inputs.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';
import { buildName, caseLine, caseRow, measureCase, peerCases, peersTable } from './lib/side-by-side.mjs';

const here = fileURLToPath(import.meta.url);
const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' }, case: { type: 'string' } } });
const options = { sizes: args.quick ? [1024] : [1024, 4096], rounds: args.quick ? 5 : 11, d: 64, m: 256, sigma: 0.5, seed: 42 };

if (args.case) {
  // A child: one case, its result as JSON on stdout.
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  const { loadFavor } = await import('favor-attention');
  const graph = async (name) => (await readFile(path.join(repo, 'bench', 'onnx', `${name}.onnx`))).buffer;
  const out = await measureCase({ ort, loadFavor, gaussian, difference, median, graph }, options, JSON.parse(args.case));
  process.stdout.write(JSON.stringify({ ...out, ortVersion: ort.env.versions?.web ?? null }));
  process.exit(0);
}

const rows = [];
let info, plainInfo, ortVersion;
for (const c of peerCases(options.sizes)) {
  const out = JSON.parse(execFileSync(process.execPath, [here, '--case', JSON.stringify(c), ...(args.quick ? ['--quick'] : [])],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 }));
  ({ info, plainInfo, ortVersion } = out);
  rows.push(caseRow(c, out));
  console.error(`  node ${process.version}: ${caseLine(c, out)}`);
}
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';
const build = buildName(info);
const md = [];
md.push('<!-- node -->');
md.push(`## Ours and onnxruntime-web in Node ${process.versions.node.split('.')[0]}`);
md.push('');
md.push(`\`node bench/node-peers.mjs\`${args.quick ? ' --quick' : ''} under Node ${process.version} (V8 ${process.versions.v8}), ${new Date().toISOString().slice(0, 10)}, ${cpu}. ` +
  `The side-by-side of the Chromium section, in this Node: ours \`loadFavor({ threads: 1 })\`, the ${build} build, ${info.tileRows}-row GEMM tiles (tileRows 'auto'), also with \`out\` (the output written into one array given with each call instead of a fresh one); our plain SIMD build, \`loadFavor({ threads: 1, simd: 'fixed' })\` (${plainInfo.tileRows}-row tiles); onnxruntime-web ${ortVersion ?? ''} (wasm, \`env.wasm.numThreads = 1\`, the graphs of bench/onnx). ` +
  `One head, d = dv = ${options.d}, inputs N(0, ${options.sigma}²) from the main tables' seeds; FAVOR+ positive orthogonal m = ${options.m}, seed ${options.seed}, the same W for all. ` +
  `Each case in its own process; outputs compared first (relative Frobenius ≤ 1e-3); then ${options.rounds} rounds calling the four in rotating order. Cells: median ms; ratios: the median of the per-round ratios (> 1: ours faster). ` +
  'The main tables run in Node 26, the active LTS (since 2026-10-28); Node 22 and 24 are in maintenance, and Node 22\'s V8 spills the 6-row tile.');
md.push('');
md.push(...peersTable(rows, info, format));
md.push('<!-- /node -->');
const section = md.join('\n');
const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, 'node', section);
await writeFile(resultsFileFor(outFile, 'node-results.json'), `${JSON.stringify({ cpu, node: process.version, v8: process.versions.v8, options, ortVersion, info, plainInfo, rows }, null, 1)}\n`);
console.log(section);
