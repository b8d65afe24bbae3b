// The browser loader's options, without a bundler: wasmUrl (string and URL), locateFile and
// wasmBinary each give the same results as the default, and a wasmUrl that does not exist
// rejects instead of hanging. Writes JSON into #result.
import { loadFavor } from 'favor-attention';

import { report } from './report.js';
import { makeInputs } from './demo.js';

const base = new URL('./node_modules/favor-attention/dist/', import.meta.url);

function exact(favor) {
  const { q, k, v } = makeInputs();
  return Array.from(favor.exactAttention(q, k, v, { causal: true }).data);
}

async function run() {
  const reference = exact(await loadFavor());
  const variants = {
    wasmUrlString: () => loadFavor({ simd: true, wasmUrl: new URL('favor-simd.wasm', base).href }),
    wasmUrlObject: () => loadFavor({ simd: false, wasmUrl: new URL('favor-scalar.wasm', base) }),
    locateFile: () => loadFavor({ locateFile: (file) => new URL(file, base) }),
    wasmBinary: async () => {
      const response = await fetch(new URL('favor-scalar.wasm', base));
      return loadFavor({ simd: false, wasmBinary: await response.arrayBuffer() });
    },
    wasmBinaryUint8: async () => {
      const response = await fetch(new URL('favor-simd.wasm', base));
      return loadFavor({ simd: true, wasmBinary: new Uint8Array(await response.arrayBuffer()) });
    },
  };
  const located = [];
  const result = { reference: reference.slice(0, 4), variants: {} };
  for (const [name, load] of Object.entries(variants)) {
    const favor = await load();
    const values = exact(favor);
    result.variants[name] = {
      simd: favor.info.simd,
      maxAbsDiff: Math.max(...values.map((x, i) => Math.abs(x - reference[i]))),
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
