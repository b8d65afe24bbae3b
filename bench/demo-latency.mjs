#!/usr/bin/env node
// Latency of the demo page in headless Chromium. By default, at the page's default settings
// (the URL without a query: the softmax model on its 256-character held-out text, FAVOR+
// positive, orthogonal, m = 256, layer 2 head 1, log colors): keystrokes in the text box (a
// character deleted and typed again, at the end and in the middle), each updating every panel;
// and the first view: navigation to every panel drawn. Starts its own Vite dev server on
// 127.0.0.1, warms up, then prints the median and spread of the page's own measurement: the
// input event's timestamp to the end of the synchronous redraw of all panels (worker round trip
// included), and to the next animation frame after it.
// --synthetic measures the synthetic view at L = 256, d = 64, m = 256 (positive kernel) instead:
// changes that keep L, d and m (feature redraw, sampling mode, input scale, kernel, input seed).
// --kernel vq | soft-vq | performer-vq measures a codebook mode instead (changes: new k-means or
// feature seed, input scale, input seed, and the temperature for soft VQ; --m sets the codebook size).
// --model softmax | performer measures the model mode on a 256-character text: keystrokes in the
// text box (a character deleted and typed again, at the end and in the middle), each updating
// every panel (the forward pass with exact attention and with the approximation, all 16 heads).
//   node bench/demo-latency.mjs [--changes 120] [--warmup 30] [--synthetic] [--kernel positive] [--m 256] [--model softmax] [--url http://127.0.0.1:5173/]
import { parseArgs } from 'node:util';

import { demoInChromium } from './demo-chromium.mjs';

const { values: args } = parseArgs({
  options: {
    changes: { type: 'string', default: '120' },
    warmup: { type: 'string', default: '30' },
    url: { type: 'string' },
    kernel: { type: 'string', default: 'positive' },
    m: { type: 'string', default: '256' },
    model: { type: 'string' },
    synthetic: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const { base, browser, close } = await demoInChromium(args.url);
try {
  const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  const kernel = args.kernel, m = Number(args.m);
  const codebook = ['vq', 'soft-vq', 'performer-vq'].includes(kernel);
  const defaults = !args.synthetic && !args.model && !codebook;
  const typing = defaults || Boolean(args.model);
  if (!codebook && kernel !== 'positive') throw new Error(`--kernel: positive, vq, soft-vq or performer-vq, got ${kernel}`);
  const TEXT = "During the most violent shocks of the Typhoon, the man at the Pequod's jaw-bone tiller had several times been reelingly hurled to the deck by its spasmodic motions, even though preventer tackles had been attached to it\u2014for they were slack\u2014because some play to the tiller";
  const query = defaults ? '' : args.model
    ? `?m=${m}&kernel=${kernel}&sampling=orthogonal&pattern=model&model=${args.model}&layer=0&head=0&tw=0&log=0&text=${encodeURIComponent(TEXT.slice(0, 256))}`
    : `?L=256&d=64&m=${m}&kernel=${kernel}&sampling=orthogonal&scale=0.5&pattern=gaussian&causal=0&log=0`;
  const firstViews = [];
  for (let n = 0; n < (defaults ? 3 : 1); n++) {  // the first view, measured on fresh loads (the server already warm after the first)
    await page.goto(`${base}${query}`);
    await page.waitForFunction(() => window.__favorDemo?.updates >= 1, null, { timeout: 60000 });
    firstViews.push(await page.evaluate(() => window.__favorDemo.firstView));
  }

  // The changes, cycled: each keeps L = 256, d = 64, m.
  let k = 0;
  const setValue = (sel, value, type) => page.$eval(sel, (el, [v, t]) => { el.value = v; el.dispatchEvent(new Event(t, { bubbles: true })); }, [value, type]);
  const changes = typing ? [
    ['keystroke at the end', null],
    ['keystroke in the middle', null],
  ] : codebook ? [
    [kernel === 'performer-vq' ? 'redraw features' : 'k-means seed', () => page.click('#redraw')],
    ['input scale', () => setValue('#scale', k % 2 ? '0.45' : '0.5', 'input')],
    ['input seed', () => setValue('#dataSeed', String(k), 'change')],
    ...(kernel === 'soft-vq' ? [['temperature', () => setValue('#temperature', String(k % 2 ? -3 : 0), 'input')]] : []),
  ] : [
    ['redraw features', () => page.click('#redraw')],
    ['sampling mode', () => page.selectOption('#sampling', ['iid', 'orthogonal', 'orthogonal-fixed'][k % 3])],
    ['input scale', () => setValue('#scale', k % 2 ? '0.45' : '0.5', 'input')],
    ['kernel', () => page.selectOption('#kernel', k % 2 ? 'oprf' : 'positive')],
    ['input seed', () => setValue('#dataSeed', String(k), 'change')],
  ];
  async function change() {
    const [name, act] = changes[k % changes.length];
    // a keystroke pair (delete, type) measures the second: the one that restores 256 characters
    let before = await page.evaluate(() => window.__favorDemo.updates);
    if (typing) {
      await page.focus('#text');
      await page.$eval('#text', (el, p) => { const i = p; el.setSelectionRange(i, i); }, name.endsWith('end') ? 256 : 128);
      await page.keyboard.press('Backspace');
      await page.waitForFunction((n) => window.__favorDemo.updates > n && window.__favorDemo.idle, before, { timeout: 30000 });
      before = await page.evaluate(() => window.__favorDemo.updates);
      k++;
      await page.keyboard.type(k % 2 ? 'e' : 'a');
    } else {
      k++;
      await act();
    }
    await page.waitForFunction((n) => window.__favorDemo.updates > n && window.__favorDemo.history.at(-1).frame !== null, before, { timeout: 30000 });
    const rec = await page.evaluate(() => window.__favorDemo.history.at(-1));
    return { name, ...rec };
  }
  const warmup = Number(args.warmup), count = Number(args.changes);
  for (let i = 0; i < warmup; i++) await change();
  const records = [];
  for (let i = 0; i < count; i++) records.push(await change());
  const state = await page.evaluate(() => new URLSearchParams(location.search).toString());
  if (!typing && !(state.includes(`m=${m}`) && state.includes('L=256&d=64'))) throw new Error(`the settings drifted: ${state}`);
  if (typing && (await page.$eval('#text', (el) => el.value.length)) !== 256) throw new Error('the text is not 256 characters long');

  const q = (values, p) => { const s = [...values].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
  const summary = (values) => ({ median: q(values, 0.5), p10: q(values, 0.1), p90: q(values, 0.9), max: Math.max(...values) });
  const result = {
    browser: `Chromium ${browser.version()}`,
    kernel,
    m,
    changes: records.length,
    latencyMs: summary(records.map((r) => r.latency)),
    toNextFrameMs: summary(records.map((r) => r.frame)),
    workerMs: summary(records.map((r) => r.worker)),
    drawMs: summary(records.map((r) => r.drawMs)),
    byControl: Object.fromEntries(changes.map(([name]) => [name, q(records.filter((r) => r.name === name).map((r) => r.latency), 0.5)])),
    ...(defaults && { firstViewMs: firstViews }),
    consoleErrors: problems,
  };
  if (args.json) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    const f = (x) => x.toFixed(1);
    console.log(defaults
      ? `demo latency at the default settings (softmax model, its 256-character held-out text; FAVOR+ positive, orthogonal, m = 256 in every layer) (${result.browser}, ${result.changes} keystrokes after ${warmup} warm-up)`
      : args.model
      ? `demo latency, model mode (${args.model}, 256-character text; ${kernel}, m = ${m} in every layer) (${result.browser}, ${result.changes} keystrokes after ${warmup} warm-up)`
      : `demo latency, ${kernel}, L = 256, d = 64, m = ${m} (${result.browser}, ${result.changes} changes after ${warmup} warm-up)`);
    console.log(`  control change → all panels drawn: median ${f(result.latencyMs.median)} ms (p10 ${f(result.latencyMs.p10)}, p90 ${f(result.latencyMs.p90)}, max ${f(result.latencyMs.max)})`);
    console.log(`  control change → next frame:       median ${f(result.toNextFrameMs.median)} ms (p90 ${f(result.toNextFrameMs.p90)})`);
    console.log(`  of which worker compute ${f(result.workerMs.median)} ms, drawing ${f(result.drawMs.median)} ms (medians)`);
    console.log(`  median by control: ${Object.entries(result.byControl).map(([n, v]) => `${n} ${f(v)}`).join(', ')} ms`);
    if (defaults) console.log(`  navigation → first view drawn: ${firstViews.map((x) => `${f(x)} ms`).join(', ')} (the first load includes Vite compiling the modules)`);
    if (problems.length) console.log(`  console errors: ${problems.join(' | ')}`);
  }
} finally {
  await close();
}
