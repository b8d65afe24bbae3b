// The repository folder served on 127.0.0.1 for benchmark pages in Chromium, with some files
// served from memory (`pages`: path -> [content type, body]); cross-origin isolated (COOP/COEP)
// when asked, as the pthreads build needs. node_modules is not served: pages load the package
// from web/ and dist/ as a user's server would. Resolves to { base, close() }.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

export async function serveRepo({ isolated = false, pages = {} } = {}) {
  const headers = (type) => ({
    'Content-Type': type, 'Cache-Control': 'no-store',
    ...(isolated && { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' }),
  });
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (pages[path]) return res.writeHead(200, headers(pages[path][0])).end(pages[path][1]);
    if (path === '/favicon.ico') return res.writeHead(204).end();  // not a console error
    const file = normalize(join(repo, path));
    if (!file.startsWith(repo) || file.split(sep).includes('node_modules')) return res.writeHead(403).end();
    try {
      if (!(await stat(file)).isFile()) throw new Error('not a file');
      res.writeHead(200, headers(TYPES[extname(file)] ?? 'application/octet-stream')).end(await readFile(file));
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

// onnxruntime-web's ESM wasm build and its wasm, as pages for serveRepo under /__ort/ (import
// '/__ort/ort.wasm.min.mjs', wasmPaths '/__ort/'): the server leaves node_modules out, as a user's
// would. {} where onnxruntime-web is not installed.
export function ortPages() {
  const dist = join(repo, 'node_modules', 'onnxruntime-web', 'dist');
  if (!existsSync(dist)) return {};
  const types = { mjs: 'text/javascript', wasm: 'application/wasm' };
  return Object.fromEntries(readdirSync(dist).filter((f) => /^ort\.wasm\.min\.mjs$|^ort-wasm-simd-threaded\.(mjs|wasm)$/.test(f))
    .map((f) => [`/__ort/${f}`, [types[f.split('.').pop()], readFileSync(join(dist, f))]]));
}

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync'];
