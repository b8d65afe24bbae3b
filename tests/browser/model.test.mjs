// The page's model mode in Chromium (playwright-core, Vite dev server on 127.0.0.1): the trained
// models (train/models) load only in model mode, with no console errors; the selected head's
// heatmaps, every head's grid and bits per character are drawn; typing changes the heatmaps and
// the bits per character; layer and head selection (select and grid) work; generation adds
// characters with exact and approximated attention; the error-vs-m study runs on the real heads;
// FAVOR#'s kernels draw every panel, and the study compares them with FAVOR+'s sampling modes;
// which heads are hard plots every head's error against its keys' spread; the page's bits per
// character are the Node runner's on the same text (the page as it opens, and the Performer's
// exported W), and the selected head's error measures the
// float64 ones of the runner's q, k and v; a switch between the modes lays every plot out and
// labels its axes as the page opened in that mode; the row inspector counts A's and Â's weights
// off its log axis and draws short rows with a tick per key (one key: its points).
// Saves docs/demo-model.png with UPDATE_SCREENSHOTS=1 (else build/screenshots/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadFavor } from 'favor-attention';

import { loadModel } from '../../model/node.js';
import { DEFAULT_TEXT } from '../../demo/src/model-panel.js';
import * as ref from '../node/reference.mjs';
import { demoInChromium, assertUrl } from './demo-server.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const unmet = !existsSync(CHROMIUM) ? `${CHROMIUM} is missing (apt-get install chromium)`
  : !existsSync(join(repo, 'dist/favor-simd.wasm')) ? 'the wasm is not built: run npm run build'
    : !existsSync(join(repo, 'train/models/manifest.json')) ? 'train/models/manifest.json is missing' : false;
if (unmet) throw new Error(`model page tests cannot run: ${unmet}`);
const shots = process.env.UPDATE_SCREENSHOTS ? join(repo, 'docs') : join(repo, 'build', 'screenshots');

const problems = [];
const openPage = demoInChromium();

async function open(query, viewport = { width: 1366, height: 900 }) {
  const requests = [];
  const page = await openPage(query, { viewport, problems, requests });
  return { page, requests };
}

const settled = (page, n) => page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle, n, { timeout: 60000 });
const read = (page) => page.evaluate(() => ({
  updates: window.__favorDemo.updates,
  shown: window.__favorDemo.shown,
  bpcExact: Number(document.querySelector('#bpc-exact').dataset.value),
  bpcApprox: Number(document.querySelector('#bpc-approx').dataset.value),
  heads: document.querySelectorAll('#heads-grid button').length,
  pressed: [...document.querySelectorAll('#heads-grid button')].findIndex((b) => b.getAttribute('aria-pressed') === 'true'),
  pixels: document.querySelector('#hm-exact canvas').toDataURL().length,
  exactHash: (() => { const c = document.querySelector('#hm-exact canvas'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let h = 0; for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) >>> 0; return h; })(),
  labels: ['text', 'model', 'layer', 'head'].map((id) => document.querySelector(`label[for=${id}]`)?.textContent),
}));

test('synthetic mode fetches no model; model mode loads the weights and draws every panel without errors', async () => {
  const synthetic = await open('?L=64&d=16&m=32');
  assert.ok(!synthetic.requests.some((u) => u.includes('train/models')), 'no model file is fetched outside model mode');
  await synthetic.page.close();
  const { page, requests } = await open('?pattern=model&model=softmax&m=64');
  await page.waitForFunction(() => Number.isFinite(Number(document.querySelector('#bpc-exact').dataset.value)), null, { timeout: 60000 });
  assert.ok(requests.some((u) => u.includes('softmax.bin')), 'the weights are fetched in model mode');
  const r = await read(page);
  assert.deepEqual(r.labels, ['text', 'model', 'layer', 'head']);
  assert.equal(r.heads, 16);
  assert.equal(r.pressed, 2 * 4 + 1, 'default: layer 2, head 1 (a sharp head of the softmax model)');
  assert.equal(r.shown.causal, true);
  // the softmax model has no exported W: its box is off (and disabled), though the setting is on
  assert.deepEqual(await page.evaluate(() => [document.querySelector('#trainedW').checked, document.querySelector('#trainedW').disabled]), [false, true]);
  assert.ok(r.bpcExact > 0.5 && r.bpcExact < 8, `bits per character ${r.bpcExact}`);
  assert.ok(r.bpcApprox > 0.5, `approximated ${r.bpcApprox}`);
  assert.deepEqual(problems, []);
  await page.close();
});

// A model-mode page once its bits per character are computed and nothing else is.
async function openComputed(query) {
  const { page } = await open(query);
  await page.waitForFunction(() => Number.isFinite(Number(document.querySelector('#bpc-approx').dataset.value)), null, { timeout: 60000 });
  await page.waitForFunction(() => window.__favorDemo.idle);
  return page;
}

// The text box's characters the model knows, its last `context` (the page's note says so),
// computed here apart from the page.
const textRead = (model) => [...DEFAULT_TEXT].filter((c) => model.index.has(c)).slice(-model.context).join('');

// The page's bits per character (read()) against CharModel.bitsPerChar in Node on the text it
// reads, exact and FAVOR+ with featureMaps (one per layer), which it disposes with the model.
function assertBitsPerChar(r, model, featureMaps) {
  try {
    const text = textRead(model);
    const exact = model.bitsPerChar(text, { method: 'exact' }).bitsPerChar;
    const approx = model.bitsPerChar(text, { method: 'favor', featureMaps }).bitsPerChar;
    // the same float32 model in another build (relaxed SIMD in Chromium): the same to 1e-5 relative
    assert.ok(Math.abs(r.bpcExact - exact) <= 1e-5 * exact, `exact: the page ${r.bpcExact}, Node ${exact}`);
    assert.ok(Math.abs(r.bpcApprox - approx) <= 1e-5 * approx, `FAVOR+: the page ${r.bpcApprox}, Node ${approx}`);
    assert.notEqual(exact, approx);
  } finally {
    featureMaps.forEach((f) => f.dispose());
    model.dispose();
  }
}

test('the bits per character shown are the Node runner\'s on the text the model reads: exact, and FAVOR+ with the Performer\'s exported W', async () => {
  const page = await openComputed('?pattern=model&model=performer');
  const r = await read(page);
  assert.equal(r.shown.model, 'performer');
  assert.equal(r.shown.trainedW, true, 'the performer model opens on its exported W');
  assert.equal(await page.evaluate(() => document.querySelector('#trainedW').checked), true, 'its box says so');
  assert.equal(r.shown.text, DEFAULT_TEXT);
  const model = await loadModel(await loadFavor(), 'performer');
  assertBitsPerChar(r, model, model.exportedFeatureMaps());
  assert.deepEqual(problems, []);
  await page.close();
});

test('the page as it opens: its bits per character are the Node runner\'s, FAVOR+ with one map per layer from the feature seed', async () => {
  const page = await openComputed('');
  const r = await read(page);
  // the softmax model has no exported W: its FAVOR+ maps are drawn from the feature seed
  const { model: name, kernel, sampling, m, seed } = r.shown;
  assert.deepEqual({ name, kernel, sampling, m, seed }, { name: 'softmax', kernel: 'positive', sampling: 'orthogonal', m: 256, seed: 1 });
  const favor = await loadFavor();
  const model = await loadModel(favor, name);
  // the page's rule (demo/src/model-view.js): layer l of `layers` draws its W from seed * layers + l
  assertBitsPerChar(r, model, Array.from({ length: model.layers }, (_, l) => favor.createFeatureMap({
    dim: model.config.width / model.heads, features: m, kernel, sampling, seed: seed * model.layers + l })));
  assert.deepEqual(problems, []);
  await page.close();
});

// The page's error measures of the head it shows (model, layer and head from its settings) against
// float64 ones of that head's q, k and v from the Node runner's forward pass, with the W that
// featureMapOf(favor, model, layer) gives (it is disposed here).
async function assertSelectedHead(page, featureMapOf) {
  const metrics = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#metrics td')].map((td) => [td.dataset.metric, Number(td.dataset.value)])));
  const { model: name, layer, head, kernel } = await page.evaluate(() => window.__favorDemo.shown);
  const favor = await loadFavor();
  const model = await loadModel(favor, name);
  const featureMap = featureMapOf(favor, model, layer);
  try {
    const { q, k, v } = model.forward(model.encode(textRead(model)), { method: 'exact' }, { capture: true }).qk[layer];
    const [, L, hd] = q.dims;
    const pick = (x) => ({ data: x.data.slice(head * L * hd, (head + 1) * L * hd), dims: [L, hd] });
    const [Q, K, V] = [pick(q), pick(k), pick(v)], W = featureMap.projection, causal = { causal: true };
    const A = ref.attentionMatrix(Q, K, causal), Ahat = ref.favorAttentionMatrix(kernel, W, Q, K, causal);
    const expected = { ...ref.compare(A, Ahat),
      outputRelError: ref.outputRelativeError(ref.exactAttention(Q, K, V, causal), ref.favorAttention(kernel, W, Q, K, V, causal)) };
    // the page's float32 pass (relaxed SIMD in Chromium) against float64 on Node's q, k and v:
    // under 1e-6 relative here
    for (const [metric, value] of Object.entries(expected)) {
      assert.ok(Math.abs(metrics[metric] - value) <= 1e-4 * Math.abs(value), `${metric}: the page ${metrics[metric]}, in float64 ${value}`);
    }
  } finally {
    featureMap.dispose();
    model.dispose();
  }
}

test('the selected head\'s error measures are those of its q, k and v from the Node runner\'s forward pass, in float64: the Performer\'s exported W', async () => {
  const page = await openComputed('?pattern=model&model=performer&layer=1&head=2');
  const { layer, head, trainedW } = await page.evaluate(() => window.__favorDemo.shown);
  assert.deepEqual({ layer, head, trainedW }, { layer: 1, head: 2, trainedW: true });
  await assertSelectedHead(page, (favor, model, l) => favor.createFeatureMap({ projection: model.projections[l], kernel: 'positive' }));
  assert.deepEqual(problems, []);
  await page.close();
});

test('the selected head\'s error measures, the page as it opens: W drawn for its layer from the feature seed', async () => {
  const page = await openComputed('');
  const { model: name, layer, head, kernel, sampling, m, seed } = await page.evaluate(() => window.__favorDemo.shown);
  assert.deepEqual({ name, layer, head }, { name: 'softmax', layer: 2, head: 1 });
  // the page's rule (demo/src/model-view.js): layer l of `layers` draws its W from seed * layers + l
  await assertSelectedHead(page, (favor, model, l) => favor.createFeatureMap({
    dim: model.config.width / model.heads, features: m, kernel, sampling, seed: seed * model.layers + l }));
  assert.deepEqual(problems, []);
  await page.close();
});

test('screenshot: docs/demo-model.png (a sharp head of the softmax model under FAVOR+, generation side by side)', async () => {
  const { page } = await open('?pattern=model&model=softmax&layer=2&head=1&kernel=positive&sampling=orthogonal&m=256&log=1&gen=60',
    { width: 1366, height: 1000 });
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-approx .gen-text')?.textContent.length === 60, null, { timeout: 60000 });
  // the model view at the bottom of the window, under the lower part of the heatmaps; hover there
  await page.$eval('#model-view', (el) => el.scrollIntoView({ block: 'end' }));
  const box = await page.$eval('#hm-approx', (el) => {
    const r = el.getBoundingClientRect(), top = Math.max(0, r.top);
    return { x: r.left + r.width * 0.55, y: top + (r.bottom - top) * 0.6 };
  });
  await page.mouse.move(box.x, box.y);
  await page.waitForFunction(() => /query .* → key /.test(document.querySelector('#readout').textContent));
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, 'demo-model.png') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('typing changes the heatmaps and the bits per character; layer and head selection work', async () => {
  const { page } = await open('?pattern=model&model=softmax&m=64&layer=0&head=0');
  const before0 = await read(page);
  await page.focus('#text');
  // the default text fills the context (256 characters, the box's maxlength): type over its first word
  assert.equal(before0.shown.L, 256);
  await page.$eval('#text', (el) => el.setSelectionRange(0, 6));
  await page.keyboard.type("Ahab's");
  await settled(page, before0.updates);
  await page.waitForFunction(() => document.querySelector('#text').value.startsWith("Ahab's the most"));
  await page.waitForFunction(() => window.__favorDemo.idle && window.__favorDemo.shown.text === document.querySelector('#text').value);
  const typed = await read(page);
  assert.notEqual(typed.exactHash, before0.exactHash, 'the exact heatmap changed');
  assert.notEqual(typed.bpcExact, before0.bpcExact, 'the bits per character changed');
  assert.equal(typed.shown.L, 256);
  // deleting characters shortens the matrices
  await page.keyboard.press('Backspace');
  await page.keyboard.press('Backspace');
  await page.waitForFunction(() => window.__favorDemo.idle && window.__favorDemo.shown.L === 254);
  // layer and head by their selects
  await page.selectOption('#layer', '2');
  await settled(page, typed.updates);
  await page.selectOption('#head', '3');
  await page.waitForFunction(() => window.__favorDemo.idle && document.querySelector('#heads-grid button[aria-pressed="true"]')?.textContent.startsWith('L2 H3'));
  const picked = await read(page);
  assert.equal(picked.pressed, 2 * 4 + 3);
  assert.notEqual(picked.exactHash, typed.exactHash, 'another head shows another matrix');
  await assertUrl(page, /layer=2&head=3/);
  // and by clicking a cell of the grid
  await page.click('#heads-grid button:nth-child(6)');
  await page.waitForFunction(() => window.__favorDemo.idle && document.querySelector('#layer').value === '1' && document.querySelector('#head').value === '1');
  // and by the keyboard: the grid is one tab stop, the selected head's; arrows move, Enter inspects
  const tabStops = await page.$$eval('#heads-grid button', (bs) => bs.map((b) => b.tabIndex));
  assert.deepEqual(tabStops.map((t, x) => [x, t]).filter(([, t]) => t === 0), [[5, 0]], 'one tab stop: L1 H1');
  await page.focus('#text');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent.slice(0, 5)), 'L1 H1', 'Tab from the text enters the grid at the selected head');
  for (const key of ['ArrowRight', 'ArrowRight', 'ArrowDown']) await page.keyboard.press(key);
  assert.equal(await page.evaluate(() => document.activeElement.textContent.slice(0, 5)), 'L2 H3');
  const n = await page.evaluate(() => window.__favorDemo.updates);
  assert.equal(await page.evaluate(() => document.querySelector('#head').value), '1', 'moving the focus does not select');
  await page.keyboard.press('Enter');
  await settled(page, n);
  await page.waitForFunction(() => document.querySelector('#layer').value === '2' && document.querySelector('#head').value === '3');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'hm-exact', 'Tab leaves the grid for the heatmaps');
  // the hover readout names the characters at (i, j)
  const box = await page.$eval('#hm-exact', (el) => { const r = el.getBoundingClientRect(); return { x: r.left + r.width * 0.6, y: r.top + r.height * 0.8 }; });
  await page.mouse.move(box.x, box.y);
  assert.match(await page.textContent('#readout'), /query .* → key /);
  assert.deepEqual(problems, []);
  await page.close();
});

test('which heads are hard: every head a point (KL against its keys\' spread, for VQ what the codewords miss, for SDERF its second-order KL₂, for ADERF its rebalanced keys\' spread), the inspected one ringed, a click inspects; on a model only', async () => {
  const { page } = await open('?pattern=model&model=softmax&m=64');
  await page.waitForFunction(() => window.__favorDemo.idle && !document.querySelector('#heads-why').hidden, null, { timeout: 60000 });
  const drawn = await page.evaluate(() => ({
    points: [...document.querySelectorAll('#heads-why-plot circle[data-key]')].map((c) => ({ key: c.getAttribute('data-key'), ring: c.getAttribute('fill') === 'none', title: c.textContent })),
    note: document.querySelector('#heads-why-note').textContent,
    side: document.querySelector('.below').classList.contains('with-side'),
    grid: [...document.querySelectorAll('#heads-grid button')].map((b) => Number(b.dataset.error)),
  }));
  assert.ok(drawn.side);
  const dots = drawn.points.filter((p) => !p.ring), rings = drawn.points.filter((p) => p.ring);
  assert.equal(dots.length, 16, 'one point per head');
  assert.deepEqual(rings.map((p) => p.key), ['2 1'], 'the inspected head (layer 2, head 1) is ringed');
  // each point's title carries the KL its grid cell frames (3 digits: within 0.5 %)
  let compared = 0;
  for (const p of dots) {
    const [layer, head] = p.key.split(' ').map(Number);
    const kl = Number(/mean row KL ([0-9.]+);/.exec(p.title)?.[1]);  // written plainly from 10⁻³ on
    const cell = drawn.grid[layer * 4 + head];
    if (cell < 1e-3) continue;
    assert.ok(Math.abs(kl - cell) <= 0.005 * cell, `${p.key}: ${p.title} against the grid's ${cell}`);
    compared++;
  }
  assert.ok(compared >= 12, `${compared} of 16 points compared`);
  assert.match(drawn.note, /over these 16 heads, σ²ₖ and the error rank alike at 0\.[6-9]\d \(Spearman\)\./);
  // a click on a point inspects its head
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.click('#heads-why-plot circle[data-key="0 2"]');
  await settled(page, n);
  await page.waitForFunction(() => document.querySelector('#layer').value === '0' && document.querySelector('#head').value === '2');
  await page.waitForFunction(() => document.querySelector('#heads-why-plot circle[fill="none"]')?.getAttribute('data-key') === '0 2');
  await assertUrl(page, /layer=0&head=2/);
  // a click (a tap) 8 px beside a point takes the nearest point within a fingertip
  const near = await page.evaluate(() => {
    const points = [...document.querySelectorAll('#heads-why-plot circle[data-key]:not([fill="none"])')]
      .map((p) => { const r = p.getBoundingClientRect(); return { key: p.getAttribute('data-key'), x: r.left + r.width / 2, y: r.top + r.height / 2 }; });
    // the point farthest from every other, so that 8 px beside it nothing else is nearer
    const apart = (p) => Math.min(...points.filter((q) => q !== p).map((q) => Math.hypot(q.x - p.x, q.y - p.y)));
    return points.filter((p) => p.key !== '0 2').sort((a, b) => apart(b) - apart(a))[0];
  });
  const m = await page.evaluate(() => window.__favorDemo.updates);
  await page.mouse.click(near.x + 8, near.y);
  await settled(page, m);
  await page.waitForFunction((key) => `${document.querySelector('#layer').value} ${document.querySelector('#head').value}` === key, near.key);
  // hard and soft VQ: against what the codewords miss; SDERF against KL₂; synthetic inputs: neither
  const card = () => page.evaluate(() => ({
    hidden: document.querySelector('#heads-why').hidden,
    points: document.querySelectorAll('#heads-why-plot circle[data-key]:not([fill="none"])').length,
    axis: [...document.querySelectorAll('#heads-why-plot .axis-label')].map((t) => t.textContent),
    label: document.querySelector('#heads-why-plot').getAttribute('aria-label'),
    note: document.querySelector('#heads-why-note').textContent,
  }));
  const choose = async (kernel) => {
    const n = await page.evaluate(() => window.__favorDemo.updates);
    await page.selectOption('#kernel', kernel);
    await settled(page, n);
    await page.waitForFunction((k) => window.__favorDemo.idle && window.__favorDemo.shown.kernel === k, kernel);
    return card();
  };
  for (const kernel of ['vq', 'soft-vq']) {
    const vq = await choose(kernel);
    assert.equal(vq.hidden, false, kernel);
    assert.equal(vq.points, 16, kernel);
    assert.deepEqual(vq.axis, ['codewords\' miss σ²ᵣ', 'mean row KL(A‖Â)'], kernel);
    assert.equal(vq.label, 'every head\'s mean row KL(A‖Â) against the codewords\' miss σ²ᵣ', kernel);
    assert.match(vq.note, /σ²ᵣ and the error rank alike at 0\.[7-9]\d/, kernel);
    assert.match(vq.note, kernel === 'vq' ? /to its codeword \(k-means' distortion\)/ : /weighted by its responsibilities/, kernel);
  }
  // SDERF: against its second-order KL₂ (on the softmax model it ranks the 16 heads at 1.00)
  const sderf = await choose('sderf');
  assert.equal(sderf.hidden, false, 'sderf');
  assert.equal(sderf.points, 16, 'sderf');
  assert.deepEqual(sderf.axis, ['second-order KL₂, iid features', 'mean row KL(A‖Â)']);
  assert.equal(sderf.label, 'every head\'s mean row KL(A‖Â) against the second-order KL₂, iid features');
  assert.match(sderf.note, /KL₂: the mean row KL that SDERF's own variance predicts to second order for m iid features/);
  assert.match(sderf.note, /over these 16 heads, KL₂ and the error rank alike at (0\.9\d|1\.00) \(Spearman\)\./);
  // ADERF: against its rebalanced keys' spread (on the softmax model at m = 64: 0.70)
  const aderf = await choose('aderf');
  assert.equal(aderf.hidden, false, 'aderf');
  assert.equal(aderf.points, 16, 'aderf');
  assert.deepEqual(aderf.axis, ['rebalanced keys\' spread σ²ₖ′', 'mean row KL(A‖Â)']);
  assert.match(aderf.note, /σ²ₖ′: how far apart the keys its queries see lie as ADERF's features see them/);
  assert.match(aderf.note, /over these 16 heads, σ²ₖ′ and the error rank alike at 0\.[6-9]\d \(Spearman\)\.$/);
  // trigonometric features are not positive estimates: no card
  assert.equal((await choose('trigonometric')).hidden, true, 'trigonometric: not plotted');
  await page.close();
  const synthetic = await open('?pattern=gaussian&L=64');
  await synthetic.page.waitForFunction(() => window.__favorDemo.updates > 0 && window.__favorDemo.idle);
  assert.equal(await synthetic.page.evaluate(() => document.querySelector('#heads-why').hidden), true);
  assert.deepEqual(problems, []);
  await synthetic.page.close();
});

// Every plot shown: its viewBox against its element's size, and its axes' labels; the error study's
// menu. A plot is laid out for its panel when its viewBox is the panel's size (plot.js).
const plots = (page) => page.evaluate(() => ({
  plots: Object.fromEntries([...document.querySelectorAll('svg.plot')].filter((svg) => svg.getClientRects().length).map((svg) => [svg.id, {
    viewBox: svg.getAttribute('viewBox'),
    size: `0 0 ${Math.max(200, Math.round(svg.clientWidth))} ${Math.max(120, Math.round(svg.clientHeight))}`,
    axes: [...svg.querySelectorAll('.axis-label')].map((t) => t.textContent),
  }])),
  metric: document.querySelector('#study-metric').selectedOptions[0].textContent,
}));
// After a click that computes: the update drawn and laid out (two frames: a plot resized by it is drawn again before its paint).
async function clickAndSettle(page, selector) {
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.click(selector);
  await settled(page, n);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

test('switching between a trained model and synthetic inputs: every plot laid out for its new panel, every axis label its menu\'s, as when the page opens in that mode', async () => {
  const direct = {};
  for (const [mode, query] of [['synthetic', '?pattern=gaussian'], ['model', '']]) {
    const { page } = await open(query);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    direct[mode] = await plots(page);
    await page.close();
  }
  for (const [mode, r] of Object.entries(direct)) for (const [id, p] of Object.entries(r.plots)) assert.equal(p.viewBox, p.size, `${mode}, opened so: #${id}`);
  assert.ok(direct.model.plots['heads-why-plot'] && direct.model.plots['row-plot'] && direct.synthetic.plots['row-plot']);
  assert.notEqual(direct.model.plots['row-plot'].size, direct.synthetic.plots['row-plot'].size, 'the inspector\'s panel is narrower beside which heads are hard');
  assert.notDeepEqual(direct.model.plots['study-plot'].axes, direct.synthetic.plots['study-plot'].axes, 'the study\'s metric follows the mode');

  // the page as opened in either mode, after a switch either way (twice over: the plots drawn in
  // the other mode before are hidden, then shown again)
  for (const [start, clicks] of [['', ['synthetic', 'model', 'synthetic']], ['?pattern=gaussian', ['model', 'synthetic', 'model']]]) {
    const { page } = await open(start);
    for (const mode of clicks) {
      await clickAndSettle(page, `#mode-${mode}`);
      assert.equal(await page.evaluate(() => window.__favorDemo.shown.pattern === 'model'), mode === 'model');
      const r = await plots(page);
      for (const [id, p] of Object.entries(r.plots)) assert.equal(p.viewBox, p.size, `${start || 'default'} → ${mode}: #${id} drawn for its panel`);
      assert.equal(r.metric, direct[mode].metric, `${start || 'default'} → ${mode}: the study's menu`);
      assert.deepEqual(r.plots['study-plot'].axes, direct[mode].plots['study-plot'].axes, `${start || 'default'} → ${mode}: the study's axes are its menu's`);
      assert.deepEqual(Object.keys(r.plots).sort(), Object.keys(direct[mode].plots).sort(), `${start || 'default'} → ${mode}: the plots shown`);
      for (const id of Object.keys(r.plots)) assert.equal(r.plots[id].viewBox, direct[mode].plots[id].viewBox, `${start || 'default'} → ${mode}: #${id} as opened so`);
    }
    await page.close();
  }
  assert.deepEqual(problems, []);
});

// The row inspector's exact and approximate lines: how many points each path draws.
const rowPlot = (page) => page.evaluate(() => ({
  sub: document.querySelector('#inspector-sub').textContent,
  drawn: [...document.querySelectorAll('#row-plot path.series')].map((p) => (p.getAttribute('d').match(/[ML]/g) ?? []).length),
  markers: [...document.querySelectorAll('#row-plot circle')].map((c) => c.getAttribute('fill')),
  xTicks: [...document.querySelectorAll('#row-plot .tick')].filter((t) => t.getAttribute('text-anchor') === 'middle').map((t) => t.textContent),
  yTicks: [...document.querySelectorAll('#row-plot .tick')].filter((t) => t.getAttribute('text-anchor') === 'end').map((t) => t.textContent),
}));

test('the row inspector says how many of A\'s and Â\'s weights are off the log axis; a short row has a tick per key, a one-key row its points', async () => {
  // the Performer's last row: A underflows to 0 for half its keys, Â is ≤ 0 for some: each counted, each the keys its line leaves out
  const performer = await open('?model=performer');
  const p = await rowPlot(performer.page);
  const m = /^query i = 255: KL\(Aᵢ ‖ Âᵢ\) = [0-9.]+, (\d+) weights of A and (\d+) of Â ≤ 0 \(off the log axis\)$/.exec(p.sub);
  assert.ok(m, p.sub);
  assert.ok(Number(m[1]) >= 64, `A: ${m[1]} weights off the axis`);
  assert.deepEqual(p.drawn, [256 - Number(m[1]), 256 - Number(m[2])], 'each line draws the keys the note does not count');
  await performer.page.close();

  // two keys: ticks 0 and 1 only, no tick between them
  const two = await open('?text=Ca');
  const t = await rowPlot(two.page);
  assert.match(t.sub, /^query i = 1: KL\(Aᵢ ‖ Âᵢ\) = /);
  assert.deepEqual(t.xTicks, ['0', '1']);
  await two.page.close();

  // one key (row 0, causal): A = Â = 1, drawn as points (a dot in a ring), on an axis that reaches below it
  for (const log of ['', '&log=0']) {
    const one = await open(`?pattern=model&row=0${log}`);
    const r = await rowPlot(one.page);
    assert.equal(r.sub, 'query i = 0: KL(Aᵢ ‖ Âᵢ) = 0');
    assert.deepEqual(r.xTicks, ['0']);
    assert.deepEqual(r.markers.sort(), ['#1d2330', 'none'], `${log}: A's dot and Â's ring`);
    assert.ok(r.yTicks.length >= 3, `${log}: y ticks ${r.yTicks}`);
    assert.ok(r.yTicks.some((y) => /^1(\.0*)?$/.test(y)), `${log}: the weight 1 has a tick: ${r.yTicks}`);
    await one.page.close();
  }
  assert.deepEqual(problems, []);
});

test('generation continues the text with exact and approximated attention', async () => {
  const { page } = await open('?pattern=model&model=performer&m=64&tw=1');
  await page.fill('#gen-n', '30');
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-approx .gen-text')?.textContent.length === 30, null, { timeout: 60000 });
  const out = await page.evaluate(() => ({
    exact: document.querySelector('#gen-exact .gen-text').textContent, approx: document.querySelector('#gen-approx .gen-text').textContent,
    prompt: document.querySelector('#gen-exact .gen-prompt').textContent,
    speed: document.querySelector('#gen-approx-speed').textContent,
  }));
  assert.equal(out.exact.length, 30);
  assert.ok(out.prompt.startsWith('…') && out.prompt.length > 10, `the prompt's tail: ${out.prompt}`);
  await page.waitForFunction(() => location.search.includes('gen=30'));
  assert.match(out.speed, /exported W.*characters\/s/);
  // the exported W is one draw: the inspector says so instead of drawing a spread
  await page.click('#spread');
  await page.waitForFunction(() => window.__favorDemo.idle && window.__favorDemo.shown.spread === true);
  await page.waitForFunction(() => /^the exported W is one draw/.test(document.querySelector('#spread-note').textContent));
  assert.equal(await page.$$eval('#row-plot path[fill-opacity]', (p) => p.length), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the error-vs-m study runs on the real heads: every head pooled, or the selected one', async () => {
  const { page } = await open('?pattern=model&model=softmax&m=64&layer=1&head=2&skernels=positive&sseeds=2&smax=64&smetric=meanRowKL');
  assert.equal(await page.$eval('#study-heads-wrap', (el) => el.hidden), false);
  const run = async () => {
    await page.click('#study-run');
    await page.waitForFunction(() => document.querySelector('#study-status').dataset.state === 'done', null, { timeout: 90000 });
    return page.evaluate(() => {
      const s = window.__favorDemo.errorStudy;
      return { heads: s.heads, note: document.querySelector('#study-note').textContent,
        counts: [...s.points.values()].map((pts) => pts[0].values.meanRowKL.length) };
    });
  };
  const all = await run();
  assert.equal(all.heads, 16);
  assert.match(all.note, /every head \(16\)/);
  assert.ok(all.counts.every((n) => n === 2 * 16), `values per point: ${all.counts}`);
  await page.selectOption('#study-heads', 'selected');
  await page.waitForFunction(() => location.search.includes('sheads=selected'));
  const one = await run();
  assert.equal(one.heads, 1);
  assert.match(one.note, /layer 1, head 2/);
  assert.ok(one.counts.every((n) => n === 2), `values per point: ${one.counts}`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('FAVOR#\'s sderf and aderf: synthetic inputs, and on the model every head\'s KL, the heatmaps, the inspector and generation', async () => {
  const finite = (values) => values.length > 0 && values.every((x) => Number.isFinite(x));
  const synthetic = await open('?pattern=gaussian&L=64&d=16&m=32&kernel=aderf');
  const s = await synthetic.page.evaluate(() => ({ kernel: window.__favorDemo.shown.kernel,
    metrics: [...document.querySelectorAll('#metrics td')].map((td) => Number(td.dataset.value)),
    note: document.querySelector('#features-note').textContent }));
  assert.equal(s.kernel, 'aderf');
  assert.ok(finite(s.metrics), `error measures ${s.metrics}`);
  assert.match(s.note, /rebalanced by Ψ/);
  await synthetic.page.close();

  const { page } = await open('?pattern=model&model=softmax&m=64&kernel=sderf&gen=10');
  const hashes = [];
  for (const kernel of ['sderf', 'aderf']) {
    if (kernel !== 'sderf') {
      const n = await page.evaluate(() => window.__favorDemo.updates);
      await page.selectOption('#kernel', kernel);
      await settled(page, n);
    }
    const r = await page.evaluate(() => ({
      kernel: window.__favorDemo.shown.kernel,
      grid: [...document.querySelectorAll('#heads-grid button')].map((b) => Number(b.dataset.error)),
      metrics: [...document.querySelectorAll('#metrics td')].map((td) => Number(td.dataset.value)),
      bpc: Number(document.querySelector('#bpc-approx').dataset.value),
      inspector: document.querySelector('#inspector-sub').textContent,
      caption: document.querySelector('#approx-caption').textContent,
      story: document.querySelector('#story-kernel').hidden ? null : document.querySelector('#story-kernel').textContent,
      approx: (() => { const c = document.querySelector('#hm-approx canvas'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let h = 0; for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) >>> 0; return h; })(),
    }));
    assert.equal(r.kernel, kernel);
    assert.equal(r.grid.length, 16);
    assert.ok(finite(r.grid) && r.grid.every((x) => x >= 0), `${kernel}: every head's mean row KL ${r.grid}`);
    assert.ok(finite(r.metrics), `${kernel}: error measures ${r.metrics}`);
    assert.ok(r.bpc > 0.5 && r.bpc < 10, `${kernel}: bits per character ${r.bpc}`);
    assert.match(r.inspector, /^query i = 255: KL\(Aᵢ ‖ Âᵢ\) = [0-9]/);
    assert.match(r.caption, new RegExp(`${kernel}, orthogonal, m = 64`));
    // the story's FAVOR+ paragraph is followed by what the grid shows instead
    assert.match(r.story ?? '', new RegExp(`^Here the grid and Â show ${kernel}, orthogonal, m = 64 instead \\(FAVOR#'s .*\\): the frames are its errors\\.$`));
    hashes.push(r.approx);
  }
  assert.notEqual(hashes[0], hashes[1], 'sderf and aderf draw different Â');
  // generation runs the approximation through causal states (FAVOR# maps fitted to the prefill)
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-approx .gen-text')?.textContent.length === 10, null, { timeout: 60000 });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the error-vs-m study: the preset compares FAVOR+ (three samplings), OPRF and FAVOR#; chosen kernels × sampling modes', async () => {
  const { page } = await open('?pattern=model&model=softmax&m=64&layer=1&head=2&sseeds=2&smax=64&smetric=kernelMSE');
  const run = async () => {
    await page.click('#study-run');
    await page.waitForFunction(() => document.querySelector('#study-status').dataset.state === 'done', null, { timeout: 120000 });
    return page.evaluate(() => ({
      points: Object.fromEntries([...window.__favorDemo.errorStudy.points].map(([k, pts]) => [k, pts.map((p) => [p.m, p.values])])),
      key: document.querySelector('#study-key').textContent, legend: document.querySelector('#study-legend').textContent,
      note: document.querySelector('#study-note').textContent, paths: document.querySelectorAll('#study-plot path.series').length,
    }));
  };
  await page.selectOption('#study-set', 'compare');
  await page.waitForFunction(() => location.search.includes('sset=compare'));
  assert.equal(await page.$eval('#study-kernels', (el) => el.disabled), true, 'the preset does not read the checkboxes');
  const compare = await run();
  assert.deepEqual(Object.keys(compare.points), ['positive|orthogonal', 'positive|simplex', 'positive|structured',
    'oprf|orthogonal', 'sderf|orthogonal', 'aderf|orthogonal']);
  for (const [series, pts] of Object.entries(compare.points)) {
    assert.deepEqual(pts.map(([m]) => m), [1, 2, 4, 8, 16, 32, 64], series);
    for (const [m, v] of pts) {
      assert.equal(v.meanRowKL.length, 2 * 16, `${series}, m = ${m}: 2 seeds × 16 heads`);
      assert.ok([...v.meanRowKL, ...v.kernelMSE].every(Number.isFinite), `${series}, m = ${m}: finite errors`);
    }
  }
  assert.equal(compare.paths, 6);
  assert.match(compare.key, /colour: sampling mode.*simplex.*structured.*line and marker: kernel.*sderf \(FAVOR#\).*aderf \(FAVOR#\)/);
  assert.match(compare.legend, /sderf \(FAVOR#\), orthogonal/);
  assert.match(compare.note, /No theory curve for oprf, sderf, aderf/);
  // the checked kernels × the checked sampling modes, on the selected head
  await page.selectOption('#study-set', 'grid');
  await page.selectOption('#study-heads', 'selected');
  // (the last checked box of a set cannot be unchecked: check the new ones first)
  await page.check('input[name=study-kernel][value=aderf]');
  await page.check('input[name=study-sampling][value=structured]');
  await page.check('input[name=study-sampling][value=simplex]');
  for (const value of ['positive', 'iid', 'orthogonal', 'orthogonal-fixed']) await page.uncheck(`#error-study input[value=${value}]`);
  await page.waitForFunction(() => location.search.includes('skernels=aderf&ssamplings=simplex%2Cstructured'));
  const grid = await run();
  assert.deepEqual(Object.keys(grid.points).sort(), ['aderf|simplex', 'aderf|structured']);
  for (const pts of Object.values(grid.points)) assert.ok(pts.every(([, v]) => v.kernelMSE.length === 2 && v.kernelMSE.every(Number.isFinite)));
  assert.deepEqual(problems, []);
  await page.close();
});
