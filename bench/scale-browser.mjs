#!/usr/bin/env node
// Scale test in the browser: the same runs as bench/scale.mjs (bench/lib/scale-run.mjs) in
// Debian's headless Chromium through playwright-core. The repository folder is served on
// 127.0.0.1 with COOP/COEP (a cross-origin isolated page, so the pthreads build can load; with
// --no-isolation without them), and the page runs web/browser.js's loadFavor in a dedicated
// module Worker: a 20–35 s call would freeze the page's main thread, and a worker may block on
// atomics where the main thread may not. Prints one JSON line like bench/scale.mjs.
//   node bench/scale-browser.mjs [--L 1048576] [--threads 1|2|auto] [--no-isolation]
import { parseArgs } from 'node:util';

import { CHROMIUM, CHROMIUM_ARGS, serveRepo } from './lib/serve-repo.mjs';

const { values: args } = parseArgs({
  options: {
    L: { type: 'string', default: '1048576' },
    threads: { type: 'string', default: '1' },  // 1: the figure comparable with Node's default
    'no-isolation': { type: 'boolean', default: false },
  },
});
const L = Number(args.L);
const threads = args.threads === 'auto' ? 'auto' : Number(args.threads);
const isolated = !args['no-isolation'];
// The page and its worker are served from memory; everything else from the repository.
const PAGE = '<!doctype html><meta charset="utf-8"><title>favor-attention scale test</title>';
const WORKER = `
import { loadFavor } from '/web/browser.js';
import { runScale } from '/bench/lib/scale-run.mjs';
onmessage = async ({ data }) => {
  try {
    const favor = await loadFavor({ threads: data.threads });
    const build = 'favor-' + (favor.info.relaxedSimd ? 'relaxed' : favor.info.simd ? 'simd' : 'scalar') + (favor.info.threads > 1 ? '-threads' : '');
    const result = runScale(favor, { L: data.L });
    favor.dispose();
    postMessage({ result: { build, crossOriginIsolated: self.crossOriginIsolated, ...result } });
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};`;
const server = await serveRepo({
  isolated, pages: { '/__scale/': ['text/html', PAGE], '/__scale/worker.mjs': ['text/javascript', WORKER] },
});
const { base } = server;

const { chromium } = await import('playwright-core');
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const problems = [];
let out;
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('crash', () => problems.push('the page crashed (renderer out of memory?)'));
  await page.goto(`${base}/__scale/`);
  // Our own time limit, below bench/run.mjs's 10-minute SIGKILL: closing the browser ourselves
  // leaves no Chromium behind.
  let timer;
  const limit = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error('timed out after 9 minutes')), 9 * 60 * 1000); });
  const reply = await Promise.race([limit, page.evaluate(({ L, threads }) => new Promise((resolve) => {
    const worker = new Worker('/__scale/worker.mjs', { type: 'module' });
    worker.onmessage = ({ data }) => resolve(data);
    worker.onerror = (e) => resolve({ error: `worker error: ${e.message ?? 'failed to load'}` });
    worker.postMessage({ L, threads });
  }), { L, threads })]).finally(() => clearTimeout(timer));
  if (reply.error) throw new Error(reply.error);
  out = { environment: 'chromium', browser: `Chromium ${browser.version()}`, pageIsolated: isolated, ...reply.result };
} catch (e) {
  out = { environment: 'chromium', browser: `Chromium ${browser.version()}`, pageIsolated: isolated, L, failed: `${e.message} ${problems.join(' | ')}`.trim().slice(0, 600) };
} finally {
  await browser.close();
  await server.close();
}
if (problems.length && !out.failed) out.consoleErrors = problems.slice(0, 5);
console.log(JSON.stringify(out));
process.exitCode = out.failed ? 1 : 0;
