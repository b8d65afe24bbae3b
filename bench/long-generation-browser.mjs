#!/usr/bin/env node
// Generation of long texts in headless Chromium: the page's long-text view (demo/src/long-view.js)
// continues its default text with long-performer's exact key/value cache and its FAVOR+ state,
// interleaved in blocks of 64 characters, one character per append, in the page's compute worker;
// this reads the view's measurements when it is done and prints characters per second and the
// states' bytes against position, as model/eval-long.mjs does in Node. Writes
// bench/long-generation-browser.json.
//   node bench/long-generation-browser.mjs [--n 16384] [--url http://127.0.0.1:5173/]
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';

import { demoInChromium } from './demo-chromium.mjs';

const { values: args } = parseArgs({ options: { n: { type: 'string', default: '16384' }, url: { type: 'string' } } });
const N = Number(args.n);
const { base, browser, close } = await demoInChromium(args.url);
let result;
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(`${base}?pattern=model&model=softmax&long=${N}`);
  await page.waitForFunction(() => !document.querySelector('#long-run').disabled, null, { timeout: 120000 });
  const version = await page.evaluate(() => navigator.userAgent.match(/Chrom(?:e|ium)\/([\d.]+)/)?.[1] ?? 'unknown');
  await page.click('#long-run');
  await page.waitForFunction(() => ['done', 'error', 'cancelled'].includes(document.querySelector('#long-text').dataset.state), null, { timeout: 1800000, polling: 1000 });
  const state = await page.$eval('#long-text', (el) => el.dataset.state);
  if (state !== 'done') throw new Error(`the long-text view ended '${state}': ${await page.textContent('#long-status')}`);
  const blocks = JSON.parse(await page.$eval('#long-text', (el) => el.dataset.blocks));
  if (problems.length) throw new Error(`console errors: ${problems.join('; ')}`);
  result = { chromium: version, cpu: os.cpus()[0]?.model ?? 'CPU', n: N, blocks };
} finally {
  await close();
}

// characters per second over the blocks whose characters (counted after the prompt) lie in [a, b)
const blocks = result.blocks;
const done = (i) => blocks.slice(0, i + 1).reduce((s, b) => s + b.exact.chars, 0);
const rate = (which, a, b) => {
  const inside = blocks.filter((_, i) => done(i) > a && done(i) <= b);
  return inside.reduce((s, x) => s + x[which].chars, 0) / (inside.reduce((s, x) => s + x[which].ms, 0) / 1000);
};
const span = 1024;
const summary = {
  favorFirst: rate('favor', span, 2 * span), favorLast: rate('favor', N - span, N),
  exactFirst: rate('exact', span, 2 * span), exactLast: rate('exact', N - span, N),
  favorBytes: [Math.min(...blocks.map((b) => b.favor.stateBytes)), Math.max(...blocks.map((b) => b.favor.stateBytes))],
  exactBytes: [blocks[0].exact.stateBytes, blocks.at(-1).exact.stateBytes],
};
const i = blocks.findIndex((_, j) => blocks.slice(j).every((b) => b.favor.chars / b.favor.ms > b.exact.chars / b.exact.ms));
summary.favorFasterFrom = i >= 0 ? blocks[i].position : null;
result.summary = summary;
writeFileSync(new URL('./long-generation-browser.json', import.meta.url), `${JSON.stringify(result, null, 1)}\n`);
const f = (x) => x.toFixed(0);
console.log(`Chromium ${result.chromium}, ${result.cpu}: ${N} characters after the page's prompt (long-performer, exact cache and FAVOR+ state interleaved by 64)`);
console.log(`characters/s, characters ${span}-${2 * span}: FAVOR+ ${f(summary.favorFirst)}, exact ${f(summary.exactFirst)}`);
console.log(`characters/s, last ${span}: FAVOR+ ${f(summary.favorLast)}, exact ${f(summary.exactLast)} (FAVOR+ last/first ${(summary.favorLast / summary.favorFirst).toFixed(2)}, exact ${(summary.exactLast / summary.exactFirst).toFixed(2)})`);
console.log(`state bytes: FAVOR+ ${summary.favorBytes.join('-')}, exact ${summary.exactBytes.join(' -> ')}`);
console.log(summary.favorFasterFrom ? `FAVOR+ faster from position ${summary.favorFasterFrom} on; at the end ${(summary.favorLast / summary.exactLast).toFixed(2)}x as fast` : 'FAVOR+ never stays faster');
