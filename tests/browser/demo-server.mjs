// The demo's Vite dev server on a free loopback port, with the headers `npm start` sends
// (demo/vite.config.js): { base (its URL), close() }.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium } from '../package/helpers.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function startDemoServer() {
  const { createServer } = await import('vite');
  const vite = await createServer({ configFile: join(repo, 'demo/vite.config.js'), logLevel: 'error',
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false } });
  await vite.listen();
  return { base: vite.resolvedUrls.local[0], close: () => vite.close() };
}

// A page of the demo at `url`, once its first update has been drawn and it is idle; console errors
// and page errors go to `problems`, requested URLs to `requests` (when given).
export async function openDemoPage(browser, url, { viewport, problems, requests } = {}) {
  const page = await browser.newPage({ viewport });
  if (requests) page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(url);
  await page.waitForFunction(() => window.__favorDemo?.updates >= 1 && window.__favorDemo.idle, null, { timeout: 60000 });
  return page;
}

// For a test file: the demo's server and Chromium, started before its tests and ended after them.
// Returns open(query, options): openDemoPage at that query of the server.
export function demoInChromium() {
  let server, browser;
  before(async () => {
    server = await startDemoServer();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  return (query, options) => openDemoPage(browser, `${server.base}${query}`, options);
}

// Asserts that the page's query string matches `pattern` (or, with absent, does not), once it
// does or after 5 s: the page writes its URL in a task of its own after the panels are drawn.
export async function assertUrl(page, pattern, { absent = false } = {}) {
  await page.waitForFunction(([source, flags, absent]) => new RegExp(source, flags).test(location.search) !== absent,
    [pattern.source, pattern.flags, absent], { timeout: 5000 }).catch(() => {});
  const search = await page.evaluate(() => location.search);
  if (absent) assert.doesNotMatch(search, pattern);
  else assert.match(search, pattern);
}
