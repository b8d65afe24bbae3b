// The demo's Vite dev server on a free loopback port, with the headers `npm start` sends
// (demo/vite.config.js): { base (its URL), close() }.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function startDemoServer() {
  const { createServer } = await import('vite');
  const vite = await createServer({ configFile: join(repo, 'demo/vite.config.js'), logLevel: 'error',
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false } });
  await vite.listen();
  return { base: vite.resolvedUrls.local[0], close: () => vite.close() };
}
