// What docs/api.md tells Vite users: keep favor-attention out of dependency pre-bundling so
// the dev server serves its .wasm next to its JS (new URL('../dist/…wasm', import.meta.url)).
import { defineConfig } from 'vite';

export default defineConfig({
  optimizeDeps: { exclude: ['favor-attention'] },
  server: { host: '127.0.0.1' },
  clearScreen: false,
});
