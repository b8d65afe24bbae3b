#!/usr/bin/env node
// What loadFavor({ worker: true }) costs per call, where users run it: in Node
// (worker_threads) and in a page of headless Chromium (a module Web Worker; the page's own
// thread, not isolated, so one thread), the measurement of bench/lib/worker-cost.mjs in each:
// the synchronous API against the worker API copying its inputs and moving them
// ({ transfer: true }), on exact attention and FAVOR+ (positive, m = 256, orthogonal, seed 42),
// one head, d = dv = 64, L = S from 64 to 4096, and on a FAVOR+ decode step (8 heads); beside
// them a bare worker's round trip (the floor). Every variant's output is first checked equal to
// the synchronous one's. Writes its section into BENCHMARKS.md (between <!-- worker --> markers)
// or --out FILE, and bench/worker-results.json (beside FILE with --out).
//
//   node bench/worker.mjs [--quick] [--out FILE.md] [--no-browser]
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

import { loadFavor } from 'favor-attention';

import { fmtL, fmtMs, fmtRatio } from './lib/format.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';
import { CHROMIUM, CHROMIUM_ARGS, serveRepo } from './lib/serve-repo.mjs';
import { CONFIG, ECHO_OUTPUT_FLOATS, measureWorkerCost } from './lib/worker-cost.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, out: { type: 'string' }, 'no-browser': { type: 'boolean', default: false } },
});
const options = { sizes: args.quick ? [64, 1024] : [64, 256, 1024, 4096], rounds: args.quick ? 5 : 9, blockMs: args.quick ? 40 : 120 };
const { d, m, H, sigma, context } = CONFIG;
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';

// Node: the floor is a worker_threads worker.
function nodeEcho() {
  const echo = new Worker(`const { parentPort } = require('node:worker_threads');
    parentPort.on('message', () => parentPort.postMessage(new Float32Array(${ECHO_OUTPUT_FLOATS})));`, { eval: true });
  let answer;
  echo.on('message', () => answer());
  return {
    roundTrip: (message) => new Promise((resolve) => { answer = resolve; echo.postMessage(message); }),
    close: () => echo.terminate(),
  };
}
const log = (where) => (line) => console.error(`  ${where}: ${line}`);
const environments = [{ id: 'node', label: `Node ${process.version}`, ...(await measureWorkerCost(loadFavor, nodeEcho(), { ...options, log: log('node') })) }];

// Chromium: the page imports web/browser.js as an app would; the floor is a Web Worker.
if (!args['no-browser']) {
  const server = await serveRepo({ pages: { '/__worker/': ['text/html', '<!doctype html><meta charset="utf-8"><title>favor-attention worker cost</title>'] } });
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); else if (msg.type() === 'log') log('chromium')(msg.text()); });
    await page.goto(`${server.base}/__worker/`);
    const result = await page.evaluate(async (opts) => {
      const { loadFavor: load } = await import('/web/browser.js');
      const { measureWorkerCost: measure, ECHO_OUTPUT_FLOATS: floats } = await import('/bench/lib/worker-cost.mjs');
      const source = `onmessage = () => postMessage(new Float32Array(${floats}));`;
      const echo = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
      let answer;
      echo.onmessage = () => answer();
      const roundTrip = (message) => new Promise((resolve) => { answer = resolve; echo.postMessage(message); });
      return measure(load, { roundTrip, close: () => echo.terminate() }, { ...opts, log: (line) => console.log(line) });
    }, options);
    if (problems.length) throw new Error(problems.join(' | '));
    environments.push({ id: 'chromium', label: `Chromium ${browser.version()}`, ...result });
  } finally {
    await browser.close();
    await server.close();
  }
}

const int = (x) => fmtL(Math.round(x));
const us = (ms) => `${fmtL(Math.round(ms * 1000))} µs`;
const info = environments[0].info;
const md = [];
md.push('<!-- worker -->');
md.push('## The worker API\'s cost per call');
md.push('');
md.push(`\`node bench/worker.mjs\`${args.quick ? ' --quick' : ''}, ${new Date().toISOString().slice(0, 10)}, ${cpu}, ${environments.map((e) => e.label).join(' and ')}, wasm ${info.relaxedSimd ? 'relaxed SIMD' : info.simd ? 'SIMD' : 'scalar'}, 1 thread. ` +
  'The same module three ways: the synchronous API, `loadFavor({ worker: true })` (a worker_threads worker in Node; in Chromium a module Web Worker, called from the page\'s own thread) and the same with `transfer: true` (inputs whose arrays span their buffer are moved, so each timed call gets fresh copies, made outside the timing). ' +
  `One head, d = dv = ${d}, inputs N(0, ${sigma}²); FAVOR+ positive orthogonal m = ${m}; decode: one position of ${H} heads appended to a FAVOR+ causal state after ${int(context)} positions. ` +
  `Milliseconds per call: the median over ${options.rounds} rounds in which each variant repeats its call for ~${options.blockMs} ms, in a rotating order. Every variant's output equals the synchronous call's bit for bit (checked first). ` +
  'The floor is a bare worker of the same environment answering each message (the decode step\'s three inputs) with an array of the output\'s size.');
md.push('');
md.push(`| call | L | ${environments.map((e) => `${e.label}: synchronous | worker, copied / moved | overhead, copied / moved`).join(' | ')} |`);
md.push(`|---|---:|${environments.map(() => '---:|---:|---:').join('|')}|`);
const callName = (r) => (r.case === 'exact' ? 'exactAttention' : r.case === 'favor' ? 'favorAttention' : `decode step (append of [${H}, 1, ${d}])`);
environments[0].rows.forEach((r, i) => {
  const cells = environments.map(({ rows }) => {
    const { ms } = rows[i];
    const over = (id) => `${us(ms[id] - ms.sync)} (${fmtRatio(ms[id] / ms.sync)}×)`;
    return `${fmtMs(ms.sync)} ms | ${fmtMs(ms.copy)} / ${fmtMs(ms.move)} ms | ${over('copy')} / ${over('move')}`;
  });
  md.push(`| ${callName(r)} | ${r.case === 'decode' ? '—' : int(r.L)} | ${cells.join(' | ')} |`);
});
md.push(`| floor: a bare worker's round trip | — | ${environments.map((e) => `— | ${fmtMs(e.echoMs)} ms | —`).join(' | ')} |`);
md.push('');
const tokens = environments.map((e) => {
  const { ms } = e.rows.find((r) => r.case === 'decode');
  return `${e.label}: ${int(1000 / ms.copy)} tokens/s against ${int(1000 / ms.sync)} on the calling thread; of its ${us(ms.copy - ms.sync)} overhead, ${us(e.echoMs)} are the bare round trip`;
});
md.push(`- Decode through the worker (${tokens.join('; ')}): a step is short, so the round trip of two messages is a large part of it. Calls that take milliseconds pay the same fixed cost, plus the copy of their inputs unless they are moved.`);
const big = environments.map((e) => { const { ms } = e.rows.find((r) => r.case === 'favor' && r.L === Math.max(...options.sizes)); return `${e.label} ${fmtMs(ms.copy - ms.move)} ms`; });
md.push(`- Overhead: the worker's time minus the synchronous time, and their ratio. Copying the inputs costs what moving them saves: at L = ${int(Math.max(...options.sizes))} (${(3 * Math.max(...options.sizes) * d * 4 / 2 ** 20).toFixed(1)} MiB of q, k, v), FAVOR+ through the worker took ${big.join(' and ')} more copied than moved. Outputs always come back moved.`);
md.push('- What the worker buys is a page that keeps drawing: a Chromium test (tests/browser/app.test.mjs) keeps ≥ 50 frames per second during a ~2 s call through it, against < 10 through the synchronous API.');
md.push('<!-- /worker -->');
const section = md.join('\n');

const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, 'worker', section);
writeFileSync(resultsFileFor(outFile, 'worker-results.json'), `${JSON.stringify({ cpu, options, environments }, null, 1)}\n`);
console.log(section);
