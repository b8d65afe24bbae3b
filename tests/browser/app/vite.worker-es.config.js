// An app that bundles its own workers as ES modules (worker.format 'es', as the demo does):
// favor-attention's worker must work in that format too.
import { defineConfig } from 'vite';

export default defineConfig({
  worker: { format: 'es' },
  build: { outDir: 'dist-es' },
  clearScreen: false,
});
