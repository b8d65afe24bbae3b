// What a person meets on the page (Chromium, playwright-core, Vite dev server on 127.0.0.1): the
// default URL opens on a trained model on held-out text (headline with the bits per character
// exact and approximated, every head, no console error); typing at the end of the default text
// changes it; a text too short to predict from is said at the text box and cleared by the next
// text, whose last character the predictions follow; a continuation disappears when its prompt
// changes; at 390×844 the heatmap fills the width, the settings are a drawer and nothing
// overflows; links from before the redesign (synthetic pattern, m, kernel, no pattern at all)
// restore their view. Saves docs/demo-story*.png with UPDATE_SCREENSHOTS=1 (else build/screenshots/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { demoInChromium, assertUrl } from './demo-server.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const unmet = !existsSync(CHROMIUM) ? `${CHROMIUM} is missing (apt-get install chromium)`
  : !existsSync(join(repo, 'dist/favor-simd.wasm')) ? 'the wasm is not built: run npm run build'
    : !existsSync(join(repo, 'train/models/manifest.json')) ? 'train/models/manifest.json is missing' : false;
if (unmet) throw new Error(`page story tests cannot run: ${unmet}`);
const shots = process.env.UPDATE_SCREENSHOTS ? join(repo, 'docs') : join(repo, 'build', 'screenshots');

const openPage = demoInChromium();

async function open(query, viewport = { width: 1440, height: 900 }) {
  const problems = [];
  const page = await openPage(query, { viewport, problems });
  return { page, problems };
}
// Waits until the panels show the text now in the box.
const caughtUp = (page) => page.waitForFunction(() => window.__favorDemo.idle
  && (window.__favorDemo.shown?.text === document.querySelector('#text').value || document.querySelector('#text-note').classList.contains('error')),
null, { timeout: 60000 });
const read = (page) => page.evaluate(() => ({
  headline: document.querySelector('#headline').textContent,
  exact: Number(document.querySelector('#headline').dataset.exact),
  approx: Number(document.querySelector('#headline').dataset.approx),
  heads: document.querySelectorAll('#heads-grid button').length,
  text: document.querySelector('#text').value,
  shown: window.__favorDemo.shown,
  L: window.__favorDemo.shown?.L,
  note: document.querySelector('#text-note').textContent,
  noteError: document.querySelector('#text-note').classList.contains('error'),
  invalid: document.querySelector('#text').getAttribute('aria-invalid'),
  status: document.querySelector('#status').textContent,
  statusError: document.querySelector('#status').classList.contains('error'),
  topTitle: document.querySelector('#top-title').textContent,
  topRow: Number(document.querySelector('#top-title').dataset.row),
  rowBox: document.querySelector('#row').value,
  lineQuery: document.querySelector('#line-view').dataset.query,
  stale: document.body.classList.contains('stale'),
}));

// How many heads the grid frames as KL >= 1, read from its title: "(N of 16 with KL ≥ 1)".
async function headsAboveOne(page) {
  const title = await page.evaluate(() => document.querySelector('#grid-panel').innerText.split('\n')[0]);
  const n = /\((\d+) of 16 with KL ≥ 1\)/.exec(title);
  assert.ok(n, title);
  return Number(n[1]);
}

test('the default URL opens on the softmax model on held-out text: headline, every head, no console error', async () => {
  const { page, problems } = await open('');
  await page.waitForFunction(() => Number.isFinite(Number(document.querySelector('#headline').dataset.approx)), null, { timeout: 60000 });
  const r = await read(page);
  assert.equal(r.shown.pattern, 'model');
  assert.equal(r.heads, 16);
  assert.match(r.headline, /The softmax model on a held-out passage: \d\.\d+ bits\/char with exact attention → \d\.\d+ with FAVOR\+ \(positive, orthogonal, m = 256\) in every layer/);
  // the figures are this text's, as computed: exact softmax attention predicts far better here
  assert.ok(r.exact > 1 && r.exact < 3 && r.approx > r.exact + 1, `exact ${r.exact}, FAVOR+ ${r.approx}`);
  assert.match(r.headline, /Performer \(trained with FAVOR\+\) 2\.11/, 'the whole held-out figures of the manifest');
  assert.ok(r.text.startsWith('During the most violent shocks of the Typhoon'));
  assert.equal(r.L, 256);
  assert.equal(r.topRow, 255, 'predictions for the last character: what comes next');
  assert.equal(r.topTitle, 'what comes next after “…slack—because some play”');
  assert.equal(r.rowBox, '255');
  assert.equal(await page.$eval('#model', (el) => el.disabled || el.options.length < 3), false, 'the model menu lists every model');
  // A is drawn on the log scale by default, said in the legend
  assert.match(await page.textContent('#legend-shared'), /one fixed log scale/);
  // FAVOR+ is what the paragraph explains and what the grid shows: no note on another kernel
  assert.equal(await page.$eval('#story-kernel', (el) => el.hidden), true);
  // the suggestion names the performer model, and what it says of the softmax model holds here
  assert.match(await page.textContent('#story-try-model'), /choose the performer model .* none of its heads reaches a KL of 1 with it\.$/);
  assert.ok(await headsAboveOne(page) > 8, 'most of the softmax model\'s heads reach a KL of 1 with FAVOR+');
  // the query's arcs reach keys lines above it: the text is painted after them, with a halo of the
  // panel's colour, so that the lines they cross stay legible
  const layers = await page.$eval('#line-view', (svg) => {
    const groups = [...svg.children].map((g) => g.getAttribute('class'));
    const style = getComputedStyle(svg.querySelector('.line-text text'));
    const lines = [...svg.querySelectorAll('.line-text text')].map((t) => t.getBBox().y);
    const arcs = [...svg.querySelectorAll('.arcs path')].map((p) => p.getBBox());
    return { groups, paintOrder: style.paintOrder, halo: style.stroke, panel: getComputedStyle(svg.parentElement).backgroundColor,
      crossing: arcs.filter((b) => lines.some((y) => y > b.y && y < b.y + b.height)).length };
  });
  assert.deepEqual(layers.groups, ['arcs', 'line-text', 'key-marks']);
  assert.match(layers.paintOrder, /^stroke/);
  assert.equal(layers.halo, layers.panel);
  assert.ok(layers.crossing > 0, 'some arc crosses a line of text here');
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, 'demo-story.png') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('A keeps its colors when m changes; Â changes', async () => {
  const { page, problems } = await open('?pattern=model&model=softmax&m=64');
  const hash = (sel) => page.$eval(sel, (c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let h = 0; for (let i = 0; i < d.length; i += 3) h = (h * 31 + d[i]) >>> 0; return h; });
  const [a0, b0] = [await hash('#hm-exact canvas'), await hash('#hm-approx canvas')];
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.$eval('#m', (el) => { el.value = String(Number(el.value) + 3); el.dispatchEvent(new Event('input', { bubbles: true })); });
  await page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle && window.__favorDemo.shown.m === 192, n, { timeout: 60000 });
  assert.equal(await hash('#hm-exact canvas'), a0, 'A does not depend on m');
  assert.notEqual(await hash('#hm-approx canvas'), b0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('typing at the end of the default text changes it; the model reads the last 256 characters', async () => {
  const { page, problems } = await open('');
  const before = await read(page);
  await page.focus('#text');
  await page.keyboard.press('Control+End');
  await page.keyboard.type(' to the tiller');
  await caughtUp(page);
  const after = await read(page);
  assert.ok(after.text.endsWith('some play to the tiller'), after.text.slice(-40));
  assert.equal(after.text.length, before.text.length + 14);
  assert.equal(after.L, 256, 'the window: the last 256 characters');
  assert.match(after.note, /reads the last 256 of 270 characters/);
  assert.match(after.topTitle, /to the tiller”$/);
  assert.notEqual(after.exact, before.exact);
  await assertUrl(page, /text=.*tiller/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a 1-character text, then a sentence: the error is said at the box and gone after; predictions follow the last character', async () => {
  const { page, problems } = await open('');
  await page.fill('#text', 'C');
  await page.waitForFunction(() => document.querySelector('#text-note').classList.contains('error'), null, { timeout: 60000 });
  const short = await read(page);
  assert.match(short.note, /at least 2 characters/);
  assert.equal(short.invalid, 'true');
  assert.equal(short.statusError, false, 'not a failure of the page: nothing in the header');
  assert.ok(short.stale, 'the panels of the previous text are marked stale');
  // every panel of the previous text is dimmed, and neither generation starts from this one
  const opacities = () => ['#matrices', '#model-view', '.inspector', '#heads-why', '.numbers']
    .map((sel) => [sel, Number(getComputedStyle(document.querySelector(sel).closest('.below') ?? document.querySelector(sel)).opacity)]);
  await page.waitForFunction((f) => new Function(`return (${f})()`)().every(([, o]) => o < 0.6), String(opacities), { timeout: 5000 })
    .catch(async () => assert.fail(`not dimmed: ${JSON.stringify(await page.evaluate(opacities))}`));
  assert.deepEqual(await page.evaluate(() => [document.querySelector('#gen-run').disabled, document.querySelector('#long-run').disabled]), [true, true]);
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.keyboard.type('all me Ishmael. Some years ago, never mind how long');
  await caughtUp(page);
  const r = await read(page);
  assert.equal(r.shown.text, 'Call me Ishmael. Some years ago, never mind how long');
  assert.equal(r.noteError, false);
  assert.equal(r.invalid, 'false');
  assert.equal(r.stale, false);
  assert.equal(r.statusError, false);
  assert.doesNotMatch(await page.evaluate(() => document.body.innerText), /failed|at least 2 characters/);
  assert.equal(r.topRow, r.L - 1, `predictions at the last row of ${r.L}`);
  assert.match(r.topTitle, /how long”$/);
  assert.equal(r.rowBox, String(r.L - 1), 'the row box says the row shown');
  assert.equal(r.lineQuery, String(r.L - 1));
  assert.deepEqual(await page.evaluate(() => [document.querySelector('#gen-run').disabled, document.querySelector('#long-run').disabled]), [false, false]);
  // the continuation starts after the prompt's last characters, '…' before them only where some are left out
  await page.fill('#gen-n', '5');
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-approx .gen-text')?.textContent.length === 5, null, { timeout: 60000 });
  assert.equal(await page.textContent('#gen-exact .gen-prompt'), '…ael. Some years ago, never mind how long', 'the last 40 characters, after a mark of what is left out');
  await page.fill('#text', 'Call me Ishmael.');
  await caughtUp(page);
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-exact .gen-prompt')?.textContent === 'Call me Ishmael.', null, { timeout: 60000 });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a picked row stays; editing the text returns the row to the last character', async () => {
  const { page, problems } = await open('');
  await page.fill('#row', '40');
  await page.press('#row', 'Enter');
  await page.waitForFunction(() => document.querySelector('#top-title').dataset.row === '40');
  await assertUrl(page, /row=40/);
  await page.focus('#text');
  await page.keyboard.press('Control+End');
  await page.keyboard.press('Backspace');
  await caughtUp(page);
  const r = await read(page);
  assert.equal(r.L, 255);
  assert.equal(r.topRow, 254);
  assert.equal(r.rowBox, '254');
  await assertUrl(page, /row=/, { absent: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a continuation disappears when its text changes', async () => {
  const { page, problems } = await open('?pattern=model&model=softmax&m=64&gen=20');
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-approx .gen-text')?.textContent.length === 20, null, { timeout: 60000 });
  await page.focus('#text');
  await page.keyboard.press('Control+End');
  await page.keyboard.type(' X');
  await caughtUp(page);
  const gen = await page.evaluate(() => ({
    exact: document.querySelector('#gen-exact').textContent, approx: document.querySelector('#gen-approx').textContent,
    note: document.querySelector('#gen-note').textContent,
  }));
  assert.equal(gen.exact, '');
  assert.equal(gen.approx, '');
  assert.match(gen.note, /changed: generate again/);
  // a generation asked for before an edit and answered after it is not shown
  await page.click('#gen-run');
  await page.focus('#text');
  await page.keyboard.type('Y');
  await caughtUp(page);
  await page.waitForFunction(() => window.__favorDemo.generated >= 2, null, { timeout: 60000 });
  assert.equal(await page.textContent('#gen-exact'), '');
  assert.deepEqual(problems, []);
  await page.close();
});

test('390×844: the heatmap fills the width, the settings are a drawer, nothing overflows', async () => {
  const { page, problems } = await open('', { width: 390, height: 844 });
  await page.waitForFunction(() => document.querySelectorAll('#heads-grid button').length === 16, null, { timeout: 60000 });
  const g = await page.evaluate(() => {
    const box = (sel) => document.querySelector(sel).getBoundingClientRect();
    const cells = [...document.querySelectorAll('#heads-grid button')].map((b) => b.getBoundingClientRect());
    return {
      scrollWidth: document.documentElement.scrollWidth, innerWidth,
      hm: box('#hm-exact').width, hmTop: box('#hm-exact').top, controlsTop: box('#controls').top,
      cellsRight: Math.max(...cells.map((c) => c.right)),
      cellWidths: [...new Set(cells.map((c) => Math.round(c.width)))],
      drawerVisible: getComputedStyle(document.querySelector('#settings-drawer')).visibility,
      // top to bottom in one column: each matrix, then the legend that reads it
      column: ['#hm-exact', '#hm-approx', '#legend-shared', '#hm-diff', '#legend-diff', '#legend-grid', '#heads-grid']
        .map((sel) => [sel, box(sel).top, box(sel).bottom]),
      // the boxes below the heatmaps, one above the other at the full width
      boxes: [...document.querySelectorAll('.model-view > *, .below > *')].filter((e) => e.getClientRects().length)
        .map((e) => ({ name: e.className || e.id, ...e.getBoundingClientRect().toJSON() })),
    };
  });
  // the plots' tick labels apart, and an empty plot's message inside its frame
  const plots = await page.evaluate(() => [...document.querySelectorAll('svg.plot')].filter((svg) => svg.getClientRects().length).map((svg) => {
    const frame = svg.getBoundingClientRect();
    const ticks = [...svg.querySelectorAll('text.tick')].map((t) => t.getBoundingClientRect()).filter((r) => r.top > frame.bottom - 40);
    const empty = svg.querySelector('text.empty')?.getBoundingClientRect();
    return { id: svg.id, left: frame.left, right: frame.right, ticks: ticks.map((r) => [r.left, r.right]).sort((a, b) => a[0] - b[0]),
      empty: empty && [empty.left, empty.right] };
  }));
  assert.ok(plots.some((p) => p.id === 'speed-plot' && p.empty) && plots.some((p) => p.id === 'study-plot' && p.empty), 'the empty study plots are measured');
  for (const p of plots) {
    assert.ok(p.ticks.length >= 2, `${p.id}: ${p.ticks.length} x tick labels`);
    p.ticks.forEach((_, i) => assert.ok(i === 0 || p.ticks[i - 1][1] <= p.ticks[i][0], `${p.id}: x tick labels ${i - 1} and ${i} overlap`));
    if (p.empty) assert.ok(p.empty[0] >= p.left && p.empty[1] <= p.right, `${p.id}: its message [${p.empty}] leaves the plot [${p.left}, ${p.right}]`);
  }
  assert.ok(g.boxes.length >= 4, `${g.boxes.length} boxes below the heatmaps`);
  for (const [i, a] of g.boxes.entries()) {
    assert.ok(a.width >= 300, `${a.name}: ${a.width} px wide`);
    for (const b of g.boxes.slice(i + 1)) {
      const overlap = Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
      assert.ok(!overlap, `${a.name} and ${b.name} overlap`);
    }
  }
  for (let i = 1; i < g.column.length; i++) {
    const [sel, top] = g.column[i], [before, , bottom] = g.column[i - 1];
    assert.ok(top >= bottom - 1, `${sel} (top ${top}) comes after ${before} (bottom ${bottom})`);
    if (sel === '#legend-diff') assert.ok(top - bottom < 40, `the A − Â legend ${top - bottom} px under its matrix`);
  }
  assert.ok(g.hm >= 300, `heatmap ${g.hm} px wide`);
  assert.equal(g.scrollWidth, g.innerWidth);
  assert.ok(g.cellsRight <= g.innerWidth, `the grid's last column ends at ${g.cellsRight}`);
  assert.equal(g.cellWidths.length, 1, `one cell width: ${g.cellWidths}`);
  assert.equal(g.drawerVisible, 'hidden');
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, 'demo-story-phone.png') });
  // the drawer opens over the page and its controls work
  await page.click('#drawer-toggle');
  await page.waitForFunction(() => getComputedStyle(document.querySelector('#settings-drawer')).visibility === 'visible');
  // focus goes to its first control shown (on a model the synthetic inputs' rows are hidden)
  assert.equal(await page.evaluate(() => document.activeElement.id), 'pattern');
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.selectOption('#head', '3');
  await page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle && window.__favorDemo.shown.head === 3, n, { timeout: 60000 });
  await page.click('#drawer-close');
  // a tap on the page beside the open drawer closes it and does nothing else there
  await page.click('#drawer-toggle');
  await page.waitForFunction(() => getComputedStyle(document.querySelector('#settings-drawer')).visibility === 'visible');
  const row = await page.inputValue('#row');
  const box = await page.evaluate(() => { const d = document.querySelector('#settings-drawer').getBoundingClientRect(); return { x: d.right, w: innerWidth, h: innerHeight }; });
  assert.ok(box.w - box.x >= 10, `the page shows beside the drawer (${box.w - box.x} px)`);
  await page.mouse.click((box.x + box.w) / 2, box.h / 2);
  await page.waitForFunction(() => !document.querySelector('#settings-drawer').classList.contains('open'));
  assert.equal(await page.inputValue('#row'), row);
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390);
  assert.deepEqual(problems, []);
  await page.close();
});

// The matrices' boxes as drawn: the three heatmaps and their panels, the two legends (bar, ticks,
// sentence) and the panels each reads, the Â caption's parts kept on one line.
const matrixBoxes = (page) => page.evaluate(() => {
  const box = (el) => el.getBoundingClientRect().toJSON();
  const q = (sel) => document.querySelector(sel);
  const panel = (sel) => box(q(sel).closest('.panel'));
  const legend = (sel) => ({
    box: box(q(sel)), title: q(`${sel} .legend-title`).textContent, titleBox: box(q(`${sel} .legend-title`)),
    titleClipped: q(`${sel} .legend-title`).scrollWidth > q(`${sel} .legend-title`).clientWidth + 1,
    bar: box(q(`${sel} canvas`)), ticks: [...q(`${sel} .ticks`).children].map((t) => ({ text: t.textContent, ...box(t) })),
  });
  return {
    innerWidth,
    heatmaps: ['#hm-exact', '#hm-approx', '#hm-diff'].map((sel) => ({ sel, ...box(q(sel)), panel: panel(sel) })),
    shared: { ...legend('#legend-shared'), from: panel('#hm-exact'), to: panel('#hm-approx') },
    diff: { ...legend('#legend-diff'), from: panel('#hm-diff'), to: panel('#hm-diff') },
    caption: { ...box(q('#approx-caption').closest('figcaption')), text: q('#approx-caption').textContent, kept: [...q('#approx-caption').children].map((c) => c.textContent) },
    tryText: q('#story-try-model').textContent,
  };
});

test('the heatmaps keep one size and the legends stay in their panels, however long the caption and the legend\'s sentence (1440, 1024, 390 px)', { timeout: 240000 }, async () => {
  // each of these counts saturated A − Â entries, which lengthens the legend's sentence; the last
  // has the longest Â caption (hard VQ with as many codewords as characters)
  for (const query of ['?model=performer', '?layer=0&head=3', '?model=finetune&kernel=sderf', '?pattern=model&kernel=vq&m=256']) {
    const { page, problems } = await open(query);
    for (const [width, height] of [[1440, 900], [1024, 900], [390, 844]]) {
      const n = await page.evaluate(() => window.__favorDemo.updates);
      await page.setViewportSize({ width, height });
      // a resize redraws the panels (the legends' ticks at their new width)
      if (width !== 1440) await page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle, n, { timeout: 60000 });
      const g = await matrixBoxes(page);
      const where = `${query} at ${width} px`;
      const inside = (a, b, what) => assert.ok(a.left >= b.left - 1 && a.right <= b.right + 1, `${where}: ${what} [${a.left}, ${a.right}] leaves [${b.left}, ${b.right}]`);
      const viewport = { left: 0, right: g.innerWidth };
      // the three heatmaps: one size, each in its panel, none over another
      const [a] = g.heatmaps;
      for (const [i, h] of g.heatmaps.entries()) {
        assert.ok(Math.abs(h.width - a.width) <= 1 && Math.abs(h.height - a.height) <= 1, `${where}: ${h.sel} ${h.width}×${h.height} against A's ${a.width}×${a.height}`);
        inside(h, h.panel, `${h.sel} in its panel`);
        inside(h, viewport, `${h.sel} in the page`);
        for (const o of g.heatmaps.slice(i + 1)) {
          const overlap = Math.min(h.right, o.right) - Math.max(h.left, o.left) > 1 && Math.min(h.bottom, o.bottom) - Math.max(h.top, o.top) > 1;
          assert.ok(!overlap, `${where}: ${h.sel} and ${o.sel} overlap`);
        }
      }
      // the legends: bar, ticks and the whole sentence within the panels each reads, ticks apart
      assert.match(g.diff.title, /^A − Â, diverging at 0 \(symmetric log\); \d[\d,]* entr(?:y|ies) beyond ±\S+ saturates?$/, where);
      for (const [name, l] of [['A, Â legend', g.shared], ['A − Â legend', g.diff]]) {
        const span = { left: l.from.left, right: l.to.right };
        for (const [what, b] of [['', l.box], [' bar', l.bar], [' sentence', l.titleBox], ...l.ticks.map((t) => [` tick ${t.text}`, t])]) {
          inside(b, span, `the ${name}${what}`);
          inside(b, viewport, `the ${name}${what} in the page`);
        }
        assert.ok(!l.titleClipped, `${where}: the ${name}'s sentence is cut: "${l.title}"`);
        assert.ok(l.ticks.length >= 3, `${where}: the ${name} has ${l.ticks.length} ticks`);
        l.ticks.slice(1).forEach((t, i) => assert.ok(l.ticks[i].right <= t.left, `${where}: the ${name}'s ticks ${l.ticks[i].text} and ${t.text} overlap`));
      }
      // the Â caption within its panel; only its "m = …" relations kept on one line
      inside(g.caption, g.heatmaps[1].panel, 'the Â caption');
      for (const k of g.caption.kept) assert.match(k, /^m( [=≥] (L|\d+))+$/, `${where}: "${k}" kept on one line`);
      if (/kernel=vq&m=256/.test(query)) {
        assert.equal(g.caption.text, '(hard VQ, k-means m = 256 per head (m ≥ L = 256: every key is its own codeword, so Â = A: trivially exact))');
        // m is L already: no suggestion to raise it
        assert.doesNotMatch(g.tryText, /raise the codewords/, where);
        assert.match(g.tryText, /lower the codewords m below L = 256/, where);
      }
    }
    assert.deepEqual(problems, [], query);
    await page.close();
  }
});

test('the grid cells keep their size while typing', async () => {
  const { page, problems } = await open('');
  const sizes = () => page.$$eval('#heads-grid button', (bs) => bs.map((b) => { const r = b.getBoundingClientRect(); return `${Math.round(r.left)},${Math.round(r.top)},${Math.round(r.width)}x${Math.round(r.height)}`; }).join(' '));
  const before = await sizes();
  await page.fill('#text', 'Ahab Ahab Ahab Ahab! The whale, the whale!');
  await caughtUp(page);
  assert.equal(await sizes(), before);
  assert.deepEqual(problems, []);
  await page.close();
});

test('links from before the page opened on a model restore their synthetic view', async () => {
  // no pattern: these links meant Gaussian inputs
  const old = await open('?L=64&d=16&m=32&kernel=hyperbolic&sampling=iid&scale=0.8&causal=1&row=10');
  const v = await old.page.evaluate(() => ({ shown: window.__favorDemo.shown, pattern: document.querySelector('#pattern').value,
    kernel: document.querySelector('#kernel').value, m: document.querySelector('#m-out').textContent, scale: document.querySelector('#scale-out').textContent,
    causal: document.querySelector('#causal').checked, row: document.querySelector('#row').value, storyHidden: document.querySelector('#story-model').hidden }));
  assert.equal(v.pattern, 'gaussian');
  assert.equal(v.shown.L, 64);
  assert.equal(v.shown.kernel, 'hyperbolic');
  assert.equal(v.m, '32');
  assert.equal(v.scale, '0.80');
  assert.equal(v.causal, true);
  assert.equal(v.row, '10');
  assert.equal(v.storyHidden, true);
  // the footer says where Q and K come from, for the inputs shown
  const footer = (page) => page.evaluate(() => document.querySelector('footer').innerText);
  assert.match(await footer(old.page), /Q, K are the chosen pattern times s; V ~ N\(0, 1\); scores use scale/);
  assert.doesNotMatch(await footer(old.page), /forward pass/);
  assert.deepEqual(old.problems, []);
  await old.page.close();
  const named = await open('?L=128&d=32&m=16&kernel=vq&pattern=clustered&scale=0.5');
  const w = await named.page.evaluate(() => ({ shown: window.__favorDemo.shown, caption: document.querySelector('#approx-caption').textContent }));
  assert.equal(w.shown.pattern, 'clustered');
  assert.equal(w.shown.kernel, 'vq');
  assert.match(w.caption, /hard VQ.*m = 16/);
  // one click back to the trained model
  await named.page.click('#mode-model');
  await named.page.waitForFunction(() => window.__favorDemo.idle && window.__favorDemo.shown?.pattern === 'model', null, { timeout: 60000 });
  assert.match(await footer(named.page), /Q and K are the chosen head's, from the model's exact forward pass; scores use scale/);
  assert.doesNotMatch(await footer(named.page), /pattern times s/);
  assert.deepEqual(named.problems, []);
  await named.page.close();
  // no pattern, but what only a model has: the model
  const hand = await open('?model=performer&layer=1&head=3');
  await hand.page.waitForFunction(() => window.__favorDemo.idle && window.__favorDemo.shown, null, { timeout: 60000 });
  const h = await hand.page.evaluate(() => ({ shown: window.__favorDemo.shown, model: document.querySelector('#model').value,
    layer: document.querySelector('#layer').value, head: document.querySelector('#head').value }));
  assert.equal(h.shown.pattern, 'model');
  assert.deepEqual([h.model, h.layer, h.head], ['performer', '1', '3']);
  // what the softmax model's suggestion said of this one, at the defaults; and its own suggestion
  await hand.page.waitForFunction(() => Number.isFinite(Number(document.querySelector('#headline').dataset.approx)), null, { timeout: 60000 });
  assert.equal(await headsAboveOne(hand.page), 0, 'none of the performer model\'s heads reaches a KL of 1');
  assert.match(await hand.page.textContent('#story-try-model'), /choose the softmax model .* most of its heads reach a KL of 1 with FAVOR\+\.$/);
  // the headline's figures read the other way round from the softmax model's, and the story says why
  const [exact, approx] = await hand.page.evaluate(() => ['exact', 'approx'].map((k) => Number(document.querySelector('#headline').dataset[k])));
  assert.ok(exact > approx, `exact ${exact}, FAVOR+ ${approx}`);
  assert.match(await hand.page.textContent('#story-trained'), /^This model was trained with FAVOR\+ in every layer: .* reads this text worse with it/);
  assert.deepEqual(hand.problems, []);
  await hand.page.close();
});

test('studies and VQ at the model\'s defaults: mean row KL, a codebook smaller than the text', async () => {
  const { page, problems } = await open('');
  assert.equal(await page.$eval('#study-metric', (el) => el.value), 'meanRowKL', 'the normalized measure by default on a model');
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.selectOption('#kernel', 'vq');
  await page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle && window.__favorDemo.shown.kernel === 'vq', n, { timeout: 60000 });
  const v = await page.evaluate(() => ({ m: window.__favorDemo.shown.m, caption: document.querySelector('#approx-caption').textContent }));
  assert.ok(v.m < 256 / 2, `codewords ${v.m}`);
  assert.doesNotMatch(v.caption, /trivially exact/);
  assert.match(await page.textContent('#story-try-model'), /raise the codewords m: at m = L/);
  // as many codewords as characters: said, and no more suggestion to raise m
  await page.$eval('#m', (el) => { el.value = String(Number(el.max)); el.dispatchEvent(new Event('input', { bubbles: true })); });
  await page.waitForFunction(() => window.__favorDemo.idle && /trivially exact/.test(document.querySelector('#approx-caption').textContent), null, { timeout: 60000 });
  assert.match(await page.textContent('#story-try-model'), /lower the codewords m below L = 256: keys then share codewords/);
  // synthetic inputs keep the kernel MSE of Lemma 2
  await page.click('#mode-synthetic');
  await page.waitForFunction(() => window.__favorDemo.idle && window.__favorDemo.shown?.pattern === 'gaussian', null, { timeout: 60000 });
  assert.equal(await page.$eval('#study-metric', (el) => el.value), 'kernelMSE');
  assert.deepEqual(problems, []);
  await page.close();
});
