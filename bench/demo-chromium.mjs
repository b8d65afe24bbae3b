// The demo page in headless Chromium for the benches that drive it: Vite's dev server on
// 127.0.0.1 (unless a URL is given) and a browser. Returns { base, browser, close() }.
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync'];

export async function demoInChromium(url) {
  let server = null, base = url;
  if (!base) {
    const { createServer } = await import('vite');
    server = await createServer({ configFile: `${repo}demo/vite.config.js`, logLevel: 'error',
      server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false } });
    await server.listen();
    base = server.resolvedUrls.local[0];
  }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  return { base, browser, close: async () => { await browser.close(); await server?.close(); } };
}
