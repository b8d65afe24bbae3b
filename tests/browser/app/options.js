// The browser loader's options, without a bundler: wasmUrl (string and URL), locateFile and
// wasmBinary each give the same bits as the default load of the same build (relaxed SIMD, or the
// plain SIMD build that the scalar one matches), and a wasmUrl that does not exist rejects
// instead of hanging. Writes JSON into #result.
import { loadFavor } from 'favor-attention';

import { report } from './report.js';
import { makeInputs } from './demo.js';

const base = new URL('./node_modules/favor-attention/dist/', import.meta.url);

function exact(favor) {
  const { q, k, v } = makeInputs();
  return Array.from(favor.exactAttention(q, k, v, { causal: true }).data);
}

async function run() {
  // The default load (the relaxed build where Chromium runs relaxed SIMD), and the plain SIMD
  // build, whose bits the scalar build shares.
  const auto = await loadFavor();
  const references = { auto: exact(auto), fixed: exact(await loadFavor({ simd: 'fixed' })) };
  const variants = {
    wasmUrlString: ['fixed', () => loadFavor({ simd: 'fixed', wasmUrl: new URL('favor-simd.wasm', base).href })],
    wasmUrlObject: ['fixed', () => loadFavor({ simd: false, wasmUrl: new URL('favor-scalar.wasm', base) })],
    wasmUrlRelaxed: ['auto', () => loadFavor({ wasmUrl: new URL(`favor-${auto.info.relaxedSimd ? 'relaxed' : 'simd'}.wasm`, base) })],
    locateFile: ['auto', () => loadFavor({ locateFile: (file) => new URL(file, base) })],
    wasmBinary: ['fixed', async () => {
      const response = await fetch(new URL('favor-scalar.wasm', base));
      return loadFavor({ simd: false, wasmBinary: await response.arrayBuffer() });
    }],
    wasmBinaryUint8: ['fixed', async () => {
      const response = await fetch(new URL('favor-simd.wasm', base));
      return loadFavor({ simd: true, wasmBinary: new Uint8Array(await response.arrayBuffer()) });
    }],
  };
  const located = [];
  const result = { relaxedSimd: auto.info.relaxedSimd, variants: {} };
  for (const [name, [against, load]] of Object.entries(variants)) {
    const favor = await load();
    const values = exact(favor);
    result.variants[name] = {
      simd: favor.info.simd,
      relaxedSimd: favor.info.relaxedSimd,
      against,
      maxAbsDiff: Math.max(...values.map((x, i) => Math.abs(x - references[against][i]))),
    };
  }
  await loadFavor({ locateFile: (file) => { located.push(file); return new URL(file, base); } });
  result.locatedFiles = located;
  try {
    await loadFavor({ wasmUrl: 123 });
    result.badWasmUrl = 'resolved';
  } catch (error) {
    result.badWasmUrl = `${error.name}: ${error.message}`;
  }
  try {
    await loadFavor({ wasmBinary: [1, 2, 3] });
    result.badWasmBinary = 'resolved';
  } catch (error) {
    result.badWasmBinary = `${error.name}: ${error.message}`;
  }
  return result;
}

report(run());
