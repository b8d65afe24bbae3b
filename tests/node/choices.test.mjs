// The names an option may take (kernel, sampling, assignment, state method) are written in several
// layers: the C++ core parses them (src/), the JS API checks them first (web/api.js, whose error
// lists them), web/index.d.ts declares them, and the page offers them (demo/src/modes.js). A name
// added to one layer and not the others would be refused, undeclared or missing from the page;
// this test reads every layer's list and asks that they are the same, in the same order, that the
// core accepts each name the API lets through, and that the fuzzer (tests/fuzz/fuzz.hpp) draws
// from all of them.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { CODEBOOK_MODES, FEATURE_KERNELS, SAMPLINGS } from '../../demo/src/modes.js';

const read = (path) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');
const quoted = (text) => [...text.matchAll(/'([^']+)'/g)].map((m) => m[1]);

// The names a C++ parse function accepts (`if (name == "x") return ...;`) and the names its error
// message lists, from its source.
async function cppNames(file, fn) {
  const source = await read(file);
  const start = source.indexOf(`${fn}(const std::string& name`);
  assert.ok(start >= 0, `${fn} in ${file}`);
  const body = source.slice(start, source.indexOf('\n}\n', start));
  return {
    parsed: [...body.matchAll(/if \(name == "([^"]+)"\) return/g)].map((m) => m[1]),
    listed: quoted(body.slice(body.indexOf('expected')).split(', got')[0]),
  };
}

// The union type `name` of index.d.ts.
async function declared(name) {
  const m = new RegExp(`export type ${name} = ([^;]+);`).exec(await read('web/index.d.ts'));
  assert.ok(m, `type ${name} in index.d.ts`);
  return quoted(m[1]);
}

// What the API's error for an unknown name lists as expected.
function refused(call) {
  try {
    call();
  } catch (e) {
    assert.ok(e instanceof RangeError, `${e}`);
    const m = /^\w+: \w+: expected one of (.*), got 'nope'$/.exec(e.message);
    assert.ok(m, e.message);
    return quoted(m[1]);
  }
  assert.fail('an unknown name was accepted');
}

// The option values of a <select> of the page.
async function menu(id) {
  const html = await read('demo/index.html');
  const start = html.indexOf(`<select id="${id}"`);
  assert.ok(start >= 0, `#${id} in demo/index.html`);
  return [...html.slice(start, html.indexOf('</select>', start)).matchAll(/<option value="([^"]+)"/g)].map((m) => m[1]);
}

// The fuzzer's count of each enum's names.
async function fuzzed(name) {
  const m = new RegExp(`\\b${name} = (\\d+)`).exec(await read('tests/fuzz/fuzz.hpp'));
  assert.ok(m, `${name} in tests/fuzz/fuzz.hpp`);
  return Number(m[1]);
}

let favor;
before(async () => { favor = await loadFavor({ threads: 1 }); });

const tensor = (rows, cols) => ({ data: new Float32Array(rows * cols).fill(0.5), dims: [rows, cols] });

const q = tensor(3, 4), codebook = tensor(2, 4);
// Each option: how the API is called with a name (`use`), the core's parse function, the
// declared type, the fuzzer's count and what the page offers of it (undefined: not offered).
const OPTIONS = {
  kernel: {
    use: (kernel) => favor.createFeatureMap({ dim: 4, features: 4, kernel, seed: 1 }).dispose(),
    cpp: ['src/favor/features/feature_map.cpp', 'parse_kernel'], type: 'Kernel', fuzz: 'kKernels',
    page: async () => [FEATURE_KERNELS, (await menu('kernel')).filter((k) => !(k in CODEBOOK_MODES))],
  },
  sampling: {
    use: (sampling) => favor.createFeatureMap({ dim: 4, features: 4, sampling, seed: 1 }).dispose(),
    cpp: ['src/favor/features/projection.cpp', 'parse_sampling'], type: 'Sampling', fuzz: 'kSamplings',
    page: async () => [SAMPLINGS, await menu('sampling')],
  },
  assignment: {
    use: (assignment) => favor.codebookAttention(q, q, q, { codebook, assignment }),
    cpp: ['src/favor/engine/codebook.cpp', 'parse_assignment'], type: 'Assignment', fuzz: 'kAssignments',
    page: async () => [Object.values(CODEBOOK_MODES)],  // the page's codebook modes, one per assignment
  },
  method: {
    use: (method) => favor.createCausalState({ method, ...(method === 'favor' && { featureMap: map }), ...(method === 'codebook' && { codebook }) }).dispose(),
    cpp: ['src/favor/tensor/causal_state.cpp', 'parse_state_method'], type: 'StateMethod',
  },
};
let map;

for (const [option, o] of Object.entries(OPTIONS)) {
  test(`${option}: the core, the API, its declarations, the fuzzer and the page name the same ones`, async () => {
    map ??= favor.createFeatureMap({ dim: 4, features: 4, seed: 1 });
    const api = refused(() => o.use('nope'));
    const cpp = await cppNames(...o.cpp);
    assert.deepEqual(cpp.parsed, api, 'the core parses');
    assert.deepEqual(cpp.listed, api, 'the core\'s error lists');
    assert.deepEqual(await declared(o.type), api, 'index.d.ts');
    if (o.fuzz) assert.equal(await fuzzed(o.fuzz), api.length, 'the fuzzer draws');
    for (const offered of (await o.page?.()) ?? []) assert.deepEqual(offered, api, 'the page offers');
    for (const name of api) o.use(name);
  });
}

test('the core\'s Kernel enum is in the order of the names', async () => {
  const api = refused(() => OPTIONS.kernel.use('nope'));
  const header = await read('include/favor/feature_map.hpp');
  assert.deepEqual(/enum class Kernel \{([^}]+)\}/.exec(header)[1].split(',').map((x) => x.trim()), api);
});
