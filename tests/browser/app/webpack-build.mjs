// The test app through webpack 5 (its Node API, production mode), into dist-webpack/: main.js as
// the entry, the package's worker and .wasm files emitted from their new URL(..., import.meta.url)
// (asset names kept readable so that the test can tell which module a page fetched). Prints the
// emitted files, the worker's chunk and webpack's warnings as JSON.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import webpack from 'webpack';

const here = fileURLToPath(new URL('.', import.meta.url));
const out = `${here}dist-webpack`;
const stats = await new Promise((resolve, reject) => {
  webpack({
    mode: 'production',
    context: here,
    entry: './main.js',
    output: { path: out, clean: true, assetModuleFilename: '[name]-[contenthash][ext]', chunkFilename: '[name]-[contenthash].js' },
    performance: { hints: false },
  }, (error, result) => (error ? reject(error) : resolve(result)));
});
const info = stats.toJson({ all: false, errors: true, warnings: true, assets: true, chunks: true, chunkModules: true });
if (stats.hasErrors()) throw new Error(info.errors.map((e) => e.message).join('\n'));
await writeFile(`${out}/index.html`, '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
  + '<title>favor-attention in a webpack app</title></head>\n<body><pre id="result"></pre><script src="main.js"></script></body></html>\n');
// The chunk that holds the package's worker script (webpack names it by its id).
const worker = info.chunks.filter((c) => c.modules.some((m) => /favor-attention\/dist\/favor-worker\.js$/.test(m.name)))
  .flatMap((c) => c.files);
console.log(JSON.stringify({ assets: info.assets.map((a) => a.name), worker, warnings: info.warnings.map((w) => w.message) }));
