#!/usr/bin/env node
// Thread scaling where web apps run it: the thread bench's calls (bench/lib/thread-cases.mjs) in
// headless Chromium (default) or Firefox (--browser firefox: Debian's firefox-esr over WebDriver
// BiDi, scripts/firefox.mjs), on a cross-origin isolated page of the repository served on 127.0.0.1.
// Each T has a dedicated module Worker holding loadFavor({ threads: T }) of web/browser.js, and
// one holding onnxruntime-web's ESM build at env.wasm.numThreads = T (bench/lib/thread-worker.mjs),
// so a call's caller may block on atomics as in a page that moves long calls off its main thread.
// Every worker times its own calls; they are made in the same rotating rounds as bench/threads.mjs
// makes them in Node (bench/lib/thread-rounds.mjs), and decode in bursts of 400 appends.
// Keeps each machine's results in bench/threads-browser-results.json (Firefox's in
// threads-firefox-results.json) and writes its section of BENCHMARKS.md (or of --out FILE) from
// them, between <!-- threads-browser --> (<!-- threads-firefox -->) markers (--out elsewhere: the
// results beside FILE, the committed ones untouched); with --json FILE alone, writes this run to FILE and nothing else.
//
// --runs N measures it all N times (each a fresh page), its table then showing each cell's range;
// --note TEXT adds a sentence on the machine under its heading; --report-only rewrites the section
// from the results kept, measuring nothing.
//
//   node bench/threads-browser.mjs [--browser chromium|firefox] [--threads 1,2] [--cases favor8,...]
//                                  [--reps 5] [--runs N] [--quick] [--no-peers] [--note TEXT]
//                                  [--out FILE.md] [--json FILE]
//   node bench/threads-browser.mjs [--browser firefox] --report-only [--out FILE.md]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { thisCpuName } from './lib/cpu-history.mjs';
import { peerCase } from './lib/ort-peer.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';
import { CHROMIUM, CHROMIUM_ARGS, ortPages, serveRepo } from './lib/serve-repo.mjs';
import { launchFirefox } from '../scripts/firefox.mjs';
import { CASES } from './lib/thread-cases.mjs';
import { kept, median, timeInRounds } from './lib/thread-rounds.mjs';
import { machineTable, toJson } from './lib/thread-table.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: {
  browser: { type: 'string', default: 'chromium' }, threads: { type: 'string' }, cases: { type: 'string' }, reps: { type: 'string' }, runs: { type: 'string', default: '1' }, quick: { type: 'boolean', default: false },
  'no-peers': { type: 'boolean', default: false }, note: { type: 'string' },
  'report-only': { type: 'boolean', default: false }, out: { type: 'string' }, json: { type: 'string' },
} });
const ENGINES = {
  chromium: { name: 'Chromium', marker: 'threads-browser', results: 'threads-browser-results.json' },
  firefox: { name: 'Firefox', marker: 'threads-firefox', results: 'threads-firefox-results.json' },
};
const engine = ENGINES[args.browser];
if (!engine) throw new RangeError(`--browser: expected chromium or firefox, got '${args.browser}'`);
const cores = availableParallelism();
const threadCounts = args.threads ? args.threads.split(',').map(Number) : [1, 2, 4, 8, 12, 16].filter((t) => t <= cores);
const reps = Number(args.reps ?? (args.quick ? 3 : 5)), runs = Number(args.runs);
const caseIds = args.cases ? args.cases.split(',') : Object.keys(CASES);
for (const id of caseIds) if (!CASES[id]) throw new RangeError(`--cases: no case '${id}' (the cases: ${Object.keys(CASES).join(', ')})`);

// onnxruntime-web's files served from memory (the server leaves node_modules out).
const pages = { '/__threads/': ['text/html', '<!doctype html><meta charset="utf-8"><title>favor-attention thread scaling</title>'],
  ...(!args['no-peers'] && ortPages()) };
const peers = Boolean(pages['/__ort/ort.wasm.min.mjs']);

const LOAD_TIMEOUT_MS = 30_000;

// Every case at every T, `runs` times (each a fresh page): this machine's results.
async function measureAll() {
  const server = await serveRepo({ isolated: true, pages });
  const browser = args.browser === 'firefox' ? await launchFirefox()
    : await (await import('playwright-core')).chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const results = { cpu: thisCpuName(), cores, browser: `${engine.name} ${browser.version()}`, date: new Date().toISOString().slice(0, 10),
    reps, interleaved: true, peerInterleaved: true, rows: [] };
  // One run: a fresh page and workers, every case at every T; its rows.
  async function measure() {
    const rows = [];
    const page = await browser.newPage();
    // Firefox's pages collect their errors themselves (page.errors); Chromium's through events.
    const problems = page.errors ?? [];
    if (!page.errors) {
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('crash', () => problems.push('the page crashed'));
    }
    await page.goto(`${server.base}/__threads/`);
    results.crossOriginIsolated = await page.evaluate(() => {
      // One message at a time per worker: each answer settles the request before it.
      window.workers = [];
      window.spawn = () => window.workers.push(new Worker('/bench/lib/thread-worker.mjs', { type: 'module' })) - 1;
      window.ask = (i, msg, timeoutMs) => new Promise((resolve, reject) => {
        const w = window.workers[i];
        const timer = timeoutMs && setTimeout(() => reject(new Error(`no answer in ${timeoutMs / 1000} s`)), timeoutMs);
        w.onmessage = ({ data }) => (clearTimeout(timer), data.error ? reject(new Error(data.error)) : resolve(data));
        w.onerror = (e) => (clearTimeout(timer), reject(new Error(`worker error: ${e.message ?? 'it failed to load'}`)));
        w.postMessage(msg);
      });
      window.replace = (i) => {
        window.workers[i].terminate();
        window.workers[i] = new Worker('/bench/lib/thread-worker.mjs', { type: 'module' });
      };
      return crossOriginIsolated;
    });
    const ask = async (i, msg, timeoutMs = 0) => {
      try {
        return await page.evaluate(([j, m, t]) => window.ask(j, m, t), [i, msg, timeoutMs]);
      } catch (e) {
        throw new Error(`${msg.op} on worker ${i}: ${e.message.split('\n')[0]}${problems.length ? ` (${problems.join(' | ')})` : ''}`);
      }
    };
    // A worker whose module starts threads of its own, loaded in a fresh worker up to 3 times:
    // Firefox can block a worker's new Worker() for good (docs/api.md, Threads), and nothing in
    // the blocked worker answers again.
    const load = async (msg) => {
      const i = await page.evaluate(() => window.spawn());
      for (let attempt = 1; ; ++attempt) {
        try {
          return { i, ...await ask(i, msg, LOAD_TIMEOUT_MS) };
        } catch (e) {
          if (attempt === 3 || !/no answer/.test(e.message)) throw e;
          console.log(`${msg.side} at T = ${msg.T}: ${e.message}; loading it again in a fresh worker`);
          await page.evaluate((j) => window.replace(j), i);
        }
      }
    };
    const ours = [], ort = [];
    for (const T of threadCounts) {
      const { i, info } = await load({ op: 'load', side: 'ours', T });
      results.info ??= info;
      ours.push({ T, i });
    }
    if (peers) {
      for (const T of threadCounts) ort.push({ T, i: (await load({ op: 'load', side: 'ort', T })).i });
    }
    const report = (row) => {
      rows.push(row);
      const decode = CASES[row.id].method === 'decode';
      console.log(`T=${String(row.threads).padStart(2)}  ${row.label.padEnd(44)} ${decode ? `${(row.ours / 1000).toFixed(1)}k tok/s` : `${row.ours.toFixed(2)} ms`}  (took ${row.used})${row.peer ? `   ort ${row.peer.toFixed(2)} ms` : ''}`);
    };
    for (const id of caseIds) {
      const c = CASES[id];
      if (c.method === 'decode') continue;
      const entries = [];
      for (const { i } of ours) {
        const { ms, used } = await ask(i, { op: 'open', id });
        entries.push({ ms, used, time: async (twice) => (await ask(i, { op: 'run', twice })).ms });
      }
      const peerAt = new Map();
      if (peerCase(c)) {
        for (const { T, i } of ort) {
          const { ms } = await ask(i, { op: 'open', id });
          peerAt.set(T, entries.length);
          entries.push({ ms, time: async (twice) => (await ask(i, { op: 'run', twice })).ms });
        }
      }
      const times = await timeInRounds(entries, reps);
      ours.forEach(({ T }, j) => {
        const p = peerAt.get(T);
        report({ id, label: c.label, threads: T, ours: median(times[j]), samples: kept(times[j]), used: entries[j].used,
          peer: p === undefined ? null : median(times[p]), ...(p !== undefined && { peerSamples: kept(times[p]) }) });
      });
    }
    // Decode: every T's state, bursts of 400 appends in rounds that rotate the order.
    for (const id of caseIds.filter((x) => CASES[x].method === 'decode')) {
      const used = [];
      for (const { i } of ours) used.push((await ask(i, { op: 'decode', id })).used);
      const rates = ours.map(() => []);
      for (let r = 0; r < reps; ++r) {
        for (let j = 0; j < ours.length; ++j) {
          const k = (j + r) % ours.length;
          rates[k].push((await ask(ours[k].i, { op: 'burst' })).rate);
        }
      }
      ours.forEach(({ T }, j) => report({ id, label: CASES[id].label, threads: T, ours: median(rates[j]), samples: kept(rates[j]), used: used[j], peer: null }));
    }
    if (problems.length) throw new Error(problems.join(' | '));
    await page.close();
    return rows;
  }
  try {
    for (let run = 0; run < runs; ++run) {
      if (runs > 1) console.log(`# run ${run + 1} of ${runs}`);
      const rows = await measure();
      if (run === 0) results.rows = rows;
      else (results.runs ??= []).push(rows);
    }
  } finally {
    await browser.close();
    await server.close();
  }
  const { info } = results;
  results.note = [`The ${info.relaxedSimd ? 'relaxed-SIMD' : info.simd ? 'SIMD' : 'scalar'} build at every T (\`favor.info\`), the page ${results.crossOriginIsolated ? '' : 'NOT '}cross-origin isolated.`, args.note].filter(Boolean).join(' ');
  return results;
}

const RESULTS = new URL(`./${engine.results}`, import.meta.url);
const all = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : {};
if (!args['report-only']) {
  const results = await measureAll();
  if (args.json) writeFileSync(args.json, toJson(results));
  if (!args.json || args.out) {
    all[`${results.cpu} (${results.cores} cores)`] = results;
    writeFileSync(resultsFileFor(args.out, engine.results), toJson(all));
  }
}
if (args['report-only'] || !args.json || args.out) {
  const machines = Object.values(all).sort((a, b) => b.cores - a.cores);
  const section = [`<!-- ${engine.marker} -->`, `## Thread scaling in ${engine.name}`, '',
    `\`node bench/threads-browser.mjs${args.browser === 'chromium' ? '' : ` --browser ${args.browser}`}\`: the calls of the thread scaling section in headless ${engine.name}, on a cross-origin isolated page of this repository served on 127.0.0.1. Each T has a dedicated module Worker holding \`loadFavor({ threads: T })\` of web/browser.js (the relaxed-SIMD build where the engine validates it; its helper threads are the pthreads build's Web Workers), and one holding onnxruntime-web's ESM wasm build at \`env.wasm.numThreads = T\` (its one-head graphs, bench/onnx), as a page moves long calls off its main thread. Each worker times its own calls (the messages' round trip is not in the figures); they are made in rounds that call every T of both libraries in turn, rotating the order, after a warm-up of at least 3 calls and 500 ms, as in Node: the median of ${[...new Set(machines.map((r) => r.reps))].join(' or ')} calls, and of up to 5× as many where they take little time (as many rounds as fit in 2 s); a call under 10 ms is made once untimed right before its timed one. After each of its calls at 2 threads or more, onnxruntime-web's worker stays busy 40 ms before it answers, while its threads stop spinning. Decode: bursts of 400 appends of one position after a 1,024-position prefill and 200 appends, each state first warmed up for 500 ms. In parentheses: the speed-up over one thread; the rows "T heads on T threads" scale the work with the threads (1.0× when each thread works as fast as one alone).`,
    '', ...machines.flatMap((r) => [machineTable(r, { reps }), '']), `<!-- /${engine.marker} -->`].join('\n');
  writeSection(args.out ?? path.join(repo, 'BENCHMARKS.md'), engine.marker, section);
  console.log(section);
}
