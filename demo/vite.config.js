// Vite config for the demo page: `npm start` runs the dev server on 127.0.0.1 with COOP/COEP
// headers (cross-origin isolation, for SharedArrayBuffer / wasm threads); scripts/build-demo.sh
// builds a static site into demo/dist with relative URLs (base './'), so any static host works.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const demo = fileURLToPath(new URL('.', import.meta.url));
const repo = fileURLToPath(new URL('..', import.meta.url));
const isolation = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  root: demo,
  base: './',
  clearScreen: false,
  server: {
    host: '127.0.0.1',
    port: 5173,
    headers: isolation,
    // The page imports the library from ../web and its .wasm from ../dist.
    fs: { allow: [repo] },
  },
  preview: { host: '127.0.0.1', port: 4173, headers: isolation },
  // Keep the package out of pre-bundling so its .wasm stays reachable next to its glue.
  optimizeDeps: { exclude: ['favor-attention'] },
  worker: { format: 'es' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
  },
});
