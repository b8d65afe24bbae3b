// The model mode's long-text view in Chromium (playwright-core, Vite dev server on 127.0.0.1):
// long-performer continues the text by 2,000 characters with its exact cache and its FAVOR+ state
// in the compute worker, both rate curves and both memory curves drawn block by block, both texts
// 2,000 characters long, the evaluation's bits-per-character curves (model/long-results.json)
// drawn; a long run can be cancelled and the panels keep answering while it runs; a long-context
// model on a text longer than the heatmaps' window draws its last 256 positions and says so.
// Saves long-text-{1440,1024,390}.png to build/screenshots (UPDATE_SCREENSHOTS=1: docs/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { demoInChromium, assertUrl } from './demo-server.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const manifest = join(repo, 'train/models/manifest.json');
const models = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).models.map((m) => m.name) : [];
const unmet = !existsSync(CHROMIUM) ? `${CHROMIUM} is missing (apt-get install chromium)`
  : !existsSync(join(repo, 'dist/favor-simd.wasm')) ? 'the wasm is not built: run npm run build'
    : !models.includes('long-performer') || !models.includes('long-softmax') ? 'train/models/manifest.json has no long-softmax and long-performer models'
      : !existsSync(join(repo, 'model/long-results.json')) ? 'model/long-results.json is missing (npm run eval:long writes it)' : false;
if (unmet) throw new Error(`long-text page tests cannot run: ${unmet}`);
const shots = process.env.UPDATE_SCREENSHOTS ? join(repo, 'docs') : join(repo, 'build', 'screenshots');

const problems = [];
const openPage = demoInChromium();
const open = (query, viewport = { width: 1440, height: 1000 }) => openPage(query, { viewport, problems });
const state = (page) => page.$eval('#long-text', (el) => el.dataset.state);

test('long text: 2,000 characters with the exact cache and the FAVOR+ state, both curves drawn, the evaluation\'s curves shown', { timeout: 300000 }, async () => {
  const page = await open('?pattern=model&model=softmax');
  assert.equal(await page.$eval('#long-text', (el) => el.hidden), false, 'the view is shown in model mode');
  await page.waitForFunction(() => !document.querySelector('#long-run').disabled, null, { timeout: 60000 });
  assert.equal(await page.inputValue('#long-n'), '2000', 'default: 2,000 characters');
  await page.click('#long-run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('#long-text').dataset.state), null, { timeout: 240000 });
  const r = await page.evaluate(() => {
    const rate = document.querySelector('#long-rate'), memory = document.querySelector('#long-memory');
    return {
      state: document.querySelector('#long-text').dataset.state, status: document.querySelector('#long-status').textContent,
      exact: document.querySelector('#long-exact .gen-text').textContent, favor: document.querySelector('#long-favor .gen-text').textContent,
      chars: [document.querySelector('#long-exact').dataset.chars, document.querySelector('#long-favor').dataset.chars],
      exactPoints: Number(rate.dataset.exactPoints), favorPoints: Number(rate.dataset.favorPoints),
      memoryPoints: Number(memory.dataset.points), memoryFirst: memory.dataset.first.split(' ').map(Number),
      start: [window.__favorDemo.long.start.promptLength, window.__favorDemo.long.start.stateBytes.exact],
      rateSeries: rate.querySelectorAll('path.series').length, memorySeries: memory.querySelectorAll('path.series').length,
      legend: document.querySelector('#long-legend').textContent, note: document.querySelector('#long-note').textContent,
      blocks: window.__favorDemo.long.blocks.map((b) => [b.position, b.exact.charsPerSecond, b.favor.charsPerSecond, b.exact.stateBytes, b.favor.stateBytes]),
      curves: Number(document.querySelector('#long-bpc').dataset.curves), bpcSeries: document.querySelectorAll('#long-bpc path.series').length,
      bpcNote: document.querySelector('#long-bpc-note').textContent,
    };
  });
  assert.equal(r.state, 'done', r.status);
  assert.equal(r.exact.length, 2000);
  assert.equal(r.favor.length, 2000);
  assert.deepEqual(r.chars, ['2000', '2000']);
  const blocks = Math.ceil(2000 / 64);
  assert.equal(r.exactPoints, blocks);
  assert.equal(r.favorPoints, blocks);
  // the memory curves begin at the prompt, where the note's "went from … after the prompt" is read
  assert.equal(r.memoryPoints, blocks + 1);
  assert.deepEqual(r.memoryFirst, r.start);
  assert.ok(r.start[1] > 0 && r.start[1] < r.blocks.at(-1)[3], `the cache after the prompt (${r.start[1]}) is smaller than at the end`);
  assert.equal(r.rateSeries, 2);
  assert.equal(r.memorySeries, 2);
  assert.match(r.legend, /exact.*FAVOR\+/);
  for (const [position, exactRate, favorRate, exactBytes, favorBytes] of r.blocks) {
    assert.ok(exactRate > 0 && favorRate > 0 && Number.isFinite(exactRate) && Number.isFinite(favorRate), `rates at ${position}: ${exactRate}, ${favorRate}`);
    assert.ok(exactBytes > 0 && favorBytes > 0, `bytes at ${position}`);
  }
  // positions grow by a block; the cache grows with them, the FAVOR+ state does not
  assert.ok(r.blocks.every((b, i) => i === 0 || b[0] - r.blocks[i - 1][0] === Math.min(64, 2000 - 64 * i)), 'positions one block apart');
  assert.ok(r.blocks.at(-1)[3] > r.blocks[0][3], 'the exact cache grows');
  const favorBytes = r.blocks.map((b) => b[4]);
  assert.ok(Math.max(...favorBytes) < 1.1 * Math.min(...favorBytes), `the FAVOR+ state stays the same size: ${Math.min(...favorBytes)} … ${Math.max(...favorBytes)}`);
  assert.match(r.note, /^Interleaved: 64 characters with the exact cache, then 64 with the FAVOR\+ state/);
  assert.match(r.note, /Memory .*the exact cache went from/);
  assert.equal(r.curves, 5);
  assert.equal(r.bpcSeries, 5);
  assert.match(r.bpcNote, /npm run eval:long/);
  assert.match(r.bpcNote, /or the last 1,024 for the exact sliding window, the last 193 to 256 for FAVOR\+ over a window \(blocks of 64\)\)/);
  // the generation's rates: the ones long-results.md shows (tests/node/results-docs.test.mjs), all three runs
  assert.match(r.bpcNote, /\(the two FAVOR\+ runs interleaved 256 characters at a time, then the exact cache's\): characters per second over its last 1,024 characters, [\d,]+ exact, [\d,]+ FAVOR\+ and [\d,]+ FAVOR\+ over a window of 256 \(FAVOR\+ [\d.]+× as fast as exact\), with [\d.]+ MB of cache against [\d.]+ kB of state \([\d.]+ kB with the window\)\.$/);
  mkdirSync(shots, { recursive: true });
  for (const width of [1440, 1024, 390]) {
    await page.setViewportSize({ width, height: 1000 });
    await page.waitForTimeout(400);  // the page redraws its plots 100 ms after a resize
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `${width} px: no horizontal scroll (${overflow} px over)`);
    await (await page.$('#long-text')).screenshot({ path: join(shots, `long-text-${width}.png`) });
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('long text: cancel stops a run of 16,384 characters, and the panels keep answering while it runs', { timeout: 180000 }, async () => {
  const page = await open('?pattern=model&model=softmax&long=16384');
  await page.waitForFunction(() => !document.querySelector('#long-run').disabled, null, { timeout: 60000 });
  assert.equal(await page.inputValue('#long-n'), '16384');
  await page.click('#long-run');
  await page.waitForFunction(() => window.__favorDemo.long?.blocks.length >= 2, null, { timeout: 60000 });
  // another head while it runs: the compute worker answers between blocks
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.selectOption('#head', '3');
  await page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle && window.__favorDemo.shown.head === 3, n, { timeout: 60000 });
  assert.equal(await state(page), 'running', 'the panels answered while the long text ran');
  await page.click('#long-cancel');
  await page.waitForFunction(() => document.querySelector('#long-text').dataset.state === 'cancelled', null, { timeout: 60000 });
  const r = await page.evaluate(() => ({
    exact: Number(document.querySelector('#long-exact').dataset.chars), favor: Number(document.querySelector('#long-favor').dataset.chars),
    status: document.querySelector('#long-status').textContent, run: document.querySelector('#long-run').disabled,
    cancel: document.querySelector('#long-cancel').disabled,
  }));
  assert.ok(r.exact >= 128 && r.exact < 16384, `${r.exact} characters before the cancel`);
  assert.equal(r.favor, r.exact);
  assert.match(r.status, /^cancelled after [0-9,]+ of 16,384 characters/);
  assert.equal(r.run, false, 'generate is enabled again');
  assert.equal(r.cancel, true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a long-context model on a text longer than the heatmaps\' window: the last 256 positions, said so; every panel drawn', { timeout: 120000 }, async () => {
  const text = 'Call me Ishmael. Some years ago, never mind how long precisely, having little money in my purse. '.repeat(11).slice(0, 1000);
  const page = await open(`?pattern=model&model=long-softmax&text=${encodeURIComponent(text)}`);
  await page.waitForFunction(() => window.__favorDemo.shown?.model === 'long-softmax' && window.__favorDemo.idle, null, { timeout: 60000 });
  const r = await page.evaluate(() => ({
    L: window.__favorDemo.shown.L, window: document.querySelector('#window-note').hidden ? null : document.querySelector('#window-note').textContent,
    note: document.querySelector('#text-note').textContent, sub: document.querySelector('#text-sub').textContent,
    inspector: document.querySelector('#inspector-sub').textContent, line: document.querySelector('#line-sub').textContent,
    heads: document.querySelectorAll('#heads-grid button').length, canvas: document.querySelector('#hm-exact canvas').width,
    bpc: Number(document.querySelector('#bpc-exact').dataset.value), model: document.querySelector('#model').value,
  }));
  assert.equal(r.model, 'long-softmax');
  assert.equal(r.L, 256);
  assert.equal(r.canvas, 256);
  assert.equal(r.heads, 16);
  assert.match(r.window ?? '', /reads 1,000 characters; the heatmaps, the line view and the row inspector show the last 256 \(positions 744–999/);
  assert.match(r.note, /^1,000 characters; the heatmaps show the last 256/);
  assert.match(r.sub, /reads its last 1,024 characters/);
  assert.match(r.inspector, /^query i = 255: KL\(Aᵢ ‖ Âᵢ\) = .* over all 1,000 keys; plotted: the last 256/);
  assert.match(r.line, /on keys before it$/);
  assert.ok(r.bpc > 0 && Number.isFinite(r.bpc), `bits per character ${r.bpc}`);
  await assertUrl(page, /model=long-softmax/);
  // generation side by side goes on from the whole text (rotary positions do not end at 256)
  await page.fill('#gen-n', '20');
  await page.click('#gen-run');
  await page.waitForFunction(() => document.querySelector('#gen-approx .gen-text')?.textContent.length === 20, null, { timeout: 60000 });
  assert.equal((await page.textContent('#gen-exact .gen-text')).length, 20);
  // back to a text that fits: no window
  const n = await page.evaluate(() => window.__favorDemo.updates);
  await page.fill('#text', text.slice(0, 200));
  await page.waitForFunction((k) => window.__favorDemo.updates > k && window.__favorDemo.idle && window.__favorDemo.shown.L === 200, n, { timeout: 60000 });
  assert.equal(await page.$eval('#window-note', (el) => el.hidden), true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('long text: a length typed into the box is the one generated, and the URL keeps it', { timeout: 120000 }, async () => {
  const page = await open('?pattern=model&model=softmax');
  await page.waitForFunction(() => !document.querySelector('#long-run').disabled, null, { timeout: 60000 });
  await page.fill('#long-n', '128');
  await page.click('#long-run');  // the click that ends the typing
  await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('#long-text').dataset.state), null, { timeout: 90000 });
  const r = await page.evaluate(() => ({ status: document.querySelector('#long-status').textContent,
    chars: [document.querySelector('#long-exact').dataset.chars, document.querySelector('#long-favor').dataset.chars] }));
  assert.deepEqual(r.chars, ['128', '128'], r.status);
  assert.match(r.status, /^done: 128 characters with each/);
  await page.waitForFunction(() => location.search.includes('long=128'));
  // out of range: the box shows the length it will generate
  await page.fill('#long-n', '10');
  await page.press('#long-n', 'Tab');
  assert.equal(await page.inputValue('#long-n'), '128');
  assert.deepEqual(problems, []);
  await page.close();
});

test('long text: FAVOR+ over a sliding window of 256 generates through 4 states per head, the note says so, and the URL keeps it', { timeout: 180000 }, async () => {
  const page = await open('?pattern=model&model=softmax');
  await page.waitForFunction(() => !document.querySelector('#long-run').disabled, null, { timeout: 60000 });
  await page.fill('#long-n', '64');
  const run = async () => {
    await page.click('#long-run');
    await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('#long-text').dataset.state), null, { timeout: 90000 });
    return page.evaluate(() => ({ status: document.querySelector('#long-status').textContent, note: document.querySelector('#long-note').textContent,
      legend: document.querySelector('#long-legend').textContent,
      chars: document.querySelector('#long-favor').dataset.chars, prompt: window.__favorDemo.long.start.promptLength,
      bytes: [window.__favorDemo.long.start.stateBytes.favor, ...window.__favorDemo.long.blocks.map((b) => b.favor.stateBytes)] }));
  };
  const whole = await run();
  assert.equal(whole.chars, '64', whole.status);
  assert.doesNotMatch(whole.note, /sliding window/);
  await page.selectOption('#long-window', '256');
  await assertUrl(page, /(^|[?&])lwin=256(&|$)/);
  const windowed = await run();
  assert.equal(windowed.chars, '64', windowed.status);
  assert.match(windowed.note, /over a sliding window of 256: blocks of 64, each character seeing its block up to itself and the 3 before it, through 4 states per layer and head/);
  assert.match(windowed.legend, /FAVOR\+ over a window of 256: 4 running states/);
  // the exact column's quality against the windowed FAVOR+ curve of the evaluation (2.56, not 3.63)
  assert.match(windowed.note, /bits per character with FAVOR\+ over a window of 256, over 8k-character sequences/);
  assert.match(whole.note, /bits per character with FAVOR\+ over the whole prefix/);
  assert.ok(windowed.prompt >= 3 * 64, `a prompt of ${windowed.prompt} characters: 4 blocks started`);
  // 4 states where the whole prefix has one (each with the layer's copy of W beside them)
  const ratio = windowed.bytes.at(-1) / whole.bytes.at(-1);
  assert.ok(ratio > 2.5 && ratio < 4, `the windowed states hold ${ratio.toFixed(2)}× the bytes`);
  assert.equal(new Set(windowed.bytes).size, 1, 'the same bytes after the prompt and after every block');
  await page.close();
  // a link with the window opens with it chosen
  const linked = await open('?pattern=model&model=softmax&lwin=256');
  assert.equal(await linked.inputValue('#long-window'), '256');
  assert.deepEqual(problems, []);
  await linked.close();
});
