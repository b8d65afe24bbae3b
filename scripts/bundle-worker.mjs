// Writes dist/favor-worker.js: the browser worker of loadFavor({ worker: true }) as ONE module
// with no imports (web/favor-worker.js, the loader and both Emscripten glues inlined).
// Why one file: web/browser.js starts it with the literal new Worker(new URL(...,
// import.meta.url), { type: 'module' }) that bundlers recognize and bundle as a worker, and
// Vite does so by default as a classic (iife) worker, a format that cannot split code: Vite <= 7
// (Rollup) fails the whole app's build on the loader's dynamic imports of the glue. A single
// file bundles in any format, and runs as is without a bundler. Its relative URLs
// ('../dist/favor-simd.wasm' from web/) stay valid from dist/.
// Run by scripts/build-wasm.sh after the glue is built; uses rolldown, Vite's bundler.
import { rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'favor-worker.js');

let rolldown;
try {
  ({ rolldown } = await import('rolldown'));
} catch (error) {
  console.error(`bundle-worker: cannot import rolldown (installed with Vite, a devDependency): run npm ci first\n${error.message}`);
  process.exit(1);
}

const bundle = await rolldown({
  input: join(root, 'web', 'favor-worker.js'),
  platform: 'browser',
  // Anything left unresolved would be a bare import the worker cannot load: fail here instead.
  onLog(level, log, handler) {
    if (log.code === 'UNRESOLVED_IMPORT') handler('error', log);
    else handler(level, log);
  },
});
try {
  const temporary = join(root, 'dist', '.favor-worker.js.tmp');
  const { output } = await bundle.write({
    file: temporary,
    format: 'es',
    codeSplitting: false,  // the glue's dynamic imports inlined: one chunk
    banner: '// favor-attention: the worker of loadFavor({ worker: true }) in browsers, built from web/favor-worker.js by scripts/bundle-worker.mjs.',
  });
  if (output.length !== 1) throw new Error(`expected one chunk, got ${output.map((o) => o.fileName).join(', ')}`);
  if (/^\s*import\s|^\s*export\s/m.test(output[0].code)) throw new Error('the bundle still has import or export statements');
  await rename(temporary, out);  // a page or test reading dist/ never sees half a file
} finally {
  await bundle.close();
}
