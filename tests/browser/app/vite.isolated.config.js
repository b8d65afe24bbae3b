// The dev server of `npm start` sends COOP/COEP: the page is cross-origin isolated, so
// favor-attention loads its threaded build.
import { defineConfig } from 'vite';

export default defineConfig({
  server: {
    host: '127.0.0.1',
    headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
  },
  clearScreen: false,
});
