// The demo page in headless Firefox (Debian's firefox-esr over WebDriver BiDi: scripts/firefox.mjs),
// served by its Vite dev server on 127.0.0.1 as in demo.test.mjs and model.test.mjs, which cover
// the page in depth in Chromium. Here: what a Firefox user meets first: the default URL opens on
// the softmax model on held-out text with its bits per character and every head. Synthetic mode draws
// every panel with the relaxed-SIMD build on threads (cross-origin isolated by the dev server),
// with finite error figures; model mode loads the trained weights, draws every head and the bits
// per character, and generates text with exact and approximated attention; no console error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchFirefox } from '../../scripts/firefox.mjs';
import { startDemoServer } from './demo-server.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const shots = join(repo, 'build', 'screenshots');  // firefox-story.png: the first view at 1440 px
const unmet = !existsSync(join(repo, 'dist/favor-simd.wasm')) ? 'the wasm is not built: run npm run build'
  : !existsSync(join(repo, 'train/models/manifest.json')) ? 'train/models/manifest.json is missing' : false;
if (unmet) throw new Error(`Firefox page tests cannot run: ${unmet}`);

let vite, firefox, base;
before(async () => {
  firefox = await launchFirefox();  // first: a missing Firefox fails fast with its message
  vite = await startDemoServer();
  base = vite.base;
}, { timeout: 90_000 });
after(async () => {
  await firefox?.close();
  await vite?.close();
}, { timeout: 30_000 });

const waitFor = (page, fn, what) => page.waitForFunction(fn, { timeout: 60_000, what });

async function open(query) {
  const page = await firefox.newPage();
  await page.goto(`${base}${query}`);
  try {
    await waitFor(page, () => window.__favorDemo?.updates >= 1 && window.__favorDemo.idle, 'the first update');
  } catch (e) {
    // What the page had reached. Firefox can freeze the compute worker for good as it starts its
    // threads (demo/src/load-watch.js, which replaces such a worker after 10 s of silence).
    const state = await page.evaluate(() => ({
      demo: window.__favorDemo ? { ready: window.__favorDemo.ready, updates: window.__favorDemo.updates, idle: window.__favorDemo.idle,
        restarts: window.__favorDemo.restarts, errors: window.__favorDemo.errors } : 'no window.__favorDemo (main.js not run)',
      status: document.querySelector('#status')?.textContent, isolated: window.crossOriginIsolated,
    })).catch((err) => `page.evaluate failed too: ${err.message}`);
    e.message += `; page state: ${JSON.stringify(state)}`;
    throw e;
  }
  const restarts = await page.evaluate(() => window.__favorDemo.restarts);
  if (restarts > 0) console.log(`# the compute worker froze while it loaded and was replaced (${restarts})`);
  return page;
}

test('the first view: the default URL shows the softmax model on held-out text, its bits per character exact and approximated, every head', { timeout: 90_000 }, async () => {
  const page = await open('');
  await waitFor(page, () => Number.isFinite(Number(document.querySelector('#headline').dataset.approx)), 'the headline');
  const first = await page.evaluate(() => ({
    headline: document.querySelector('#headline').textContent,
    heads: document.querySelectorAll('#heads-grid button').length,
    text: document.querySelector('#text').value,
    shown: window.__favorDemo.shown,
  }));
  assert.match(first.headline, /softmax model on a held-out passage: \d\.\d+ bits\/char with exact attention → \d\.\d+ with FAVOR\+/);
  assert.match(first.headline, /Performer \(trained with FAVOR\+\) 2\.11/, 'the held-out figures of the manifest');
  assert.equal(first.heads, 16);
  assert.ok(first.text.startsWith('During the most violent shocks of the Typhoon'), first.text);
  assert.equal(first.shown.pattern, 'model');
  // At 1440 px the captions over the heatmaps wrap, and the heatmaps stay level (subgrid rows)
  await page.setViewport(1440, 900);
  await new Promise((resolve) => setTimeout(resolve, 500));  // the page redraws 100 ms after a resize
  const tops = await page.evaluate(() => ['#heads-grid', '#hm-exact', '#hm-approx', '#hm-diff']
    .map((sel) => Math.round(document.querySelector(sel).getBoundingClientRect().top)));
  assert.ok(tops.every((t) => t === tops[0]), `the grid and the heatmaps start at ${tops}`);
  mkdirSync(shots, { recursive: true });
  writeFileSync(join(shots, 'firefox-story.png'), await page.screenshot());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('synthetic mode: every panel drawn with the relaxed-SIMD build on threads, finite error figures, no console error', { timeout: 90_000 }, async () => {
  const page = await open('?pattern=gaussian');
  const info = await page.evaluate(() => ({
    shown: window.__favorDemo.shown,
    canvases: [...document.querySelectorAll('.hm canvas')].map((c) => [c.width, c.height]),
    inked: [...document.querySelectorAll('.hm canvas')].map((c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const colors = new Set();
      for (let i = 0; i < px.length; i += 4 * 97) colors.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
      return colors.size;
    }),
    metrics: [...document.querySelectorAll('#metrics td')].map((td) => [td.dataset.metric, Number(td.dataset.value)]),
    status: document.querySelector('#status').textContent,
    rowPaths: document.querySelectorAll('#row-plot path.series').length,
    cores: navigator.hardwareConcurrency,
  }));
  assert.equal(info.shown.L, 256);
  assert.deepEqual(info.canvases, [[256, 256], [256, 256], [256, 256]]);
  for (const [i, colors] of info.inked.entries()) assert.ok(colors > 10, `heatmap ${i} has ${colors} colors in its samples: not drawn`);
  assert.ok(info.metrics.length >= 3, `error figures: ${JSON.stringify(info.metrics)}`);
  for (const [name, v] of info.metrics) assert.ok(Number.isFinite(v) && v >= 0, `${name} = ${v}`);
  // Firefox >= 146 validates relaxed SIMD; the dev server sends COOP/COEP, so the page's worker threads.
  const threads = Number(/^ready: WebAssembly relaxed SIMD \(fused multiply-add\), (\d+) threads?/.exec(info.status)?.[1]);
  assert.ok(threads >= 1, `status '${info.status}': expected the relaxed-SIMD build`);
  assert.ok(info.cores < 2 || threads >= 2, `status '${info.status}' on ${info.cores} cores: expected threads`);
  assert.equal(info.rowPaths, 2, 'the row inspector plots exact and approximate');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('model mode: the trained weights load, every head and the bits per character are drawn, generation runs', { timeout: 120_000 }, async () => {
  const page = await open('?pattern=model&model=performer&m=64&tw=1');
  await waitFor(page, () => Number.isFinite(Number(document.querySelector('#bpc-exact').dataset.value)), 'the bits per character');
  const drawn = await page.evaluate(() => ({
    heads: document.querySelectorAll('#heads-grid button').length,
    bpc: [Number(document.querySelector('#bpc-exact').dataset.value), Number(document.querySelector('#bpc-approx').dataset.value)],
    causal: window.__favorDemo.shown.causal,
  }));
  assert.equal(drawn.heads, 16);
  assert.equal(drawn.causal, true);
  for (const bpc of drawn.bpc) assert.ok(bpc > 0.5 && bpc < 8, `bits per character ${bpc}`);
  await page.evaluate(() => {
    const n = document.querySelector('#gen-n');
    n.value = '30';
    n.dispatchEvent(new Event('input', { bubbles: true }));
    n.dispatchEvent(new Event('change', { bubbles: true }));
    document.querySelector('#gen-run').click();
  });
  await waitFor(page, () => document.querySelector('#gen-approx .gen-text')?.textContent.length === 30, '30 generated characters');
  const out = await page.evaluate(() => ({
    exact: document.querySelector('#gen-exact .gen-text').textContent,
    speed: document.querySelector('#gen-approx-speed').textContent,
  }));
  assert.equal(out.exact.length, 30);
  assert.match(out.speed, /exported W.*characters\/s/);
  assert.deepEqual(page.errors, []);
  await page.close();
});
