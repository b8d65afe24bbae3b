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
    const m = /^(\w+): expected one of (.*), got 'nope'$/.exec(e.message);
    assert.ok(m, e.message);
    return quoted(m[2]);
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

test('kernels: the core, the API, its declarations and the page name the same ones', async () => {
  const api = refused(() => favor.createFeatureMap({ dim: 4, features: 4, kernel: 'nope' }));
  const cpp = await cppNames('src/favor/features/feature_map.cpp', 'parse_kernel');
  assert.deepEqual(cpp.parsed, api);
  assert.deepEqual(cpp.listed, api);
  assert.deepEqual(await declared('Kernel'), api);
  assert.deepEqual(FEATURE_KERNELS, api);
  assert.deepEqual(await menu('kernel'), [...api, ...Object.keys(CODEBOOK_MODES)], 'the page\'s kernel menu');
  const header = await read('include/favor/feature_map.hpp');
  assert.deepEqual(/enum class Kernel \{([^}]+)\}/.exec(header)[1].split(',').map((s) => s.trim()), api.map((k) => k.replace(/-/g, '_')));
  assert.equal(await fuzzed('kKernels'), api.length);
  for (const kernel of api) favor.createFeatureMap({ dim: 4, features: 4, kernel, seed: 1 }).dispose();
});

test('samplings: the same ones everywhere', async () => {
  const api = refused(() => favor.createFeatureMap({ dim: 4, features: 4, sampling: 'nope' }));
  const cpp = await cppNames('src/favor/features/projection.cpp', 'parse_sampling');
  assert.deepEqual(cpp.parsed, api);
  assert.deepEqual(cpp.listed, api);
  assert.deepEqual(await declared('Sampling'), api);
  assert.deepEqual(SAMPLINGS, api);
  assert.deepEqual(await menu('sampling'), api, 'the page\'s sampling menu');
  assert.equal(await fuzzed('kSamplings'), api.length);
  for (const sampling of api) favor.createFeatureMap({ dim: 4, features: 4, sampling, seed: 1 }).dispose();
});

test('codebook assignments and causal-state methods: the same ones everywhere', async () => {
  const q = tensor(3, 4), codebook = tensor(2, 4);
  const assignments = refused(() => favor.codebookAttention(q, q, q, { codebook, assignment: 'nope' }));
  const cppA = await cppNames('src/favor/engine/codebook.cpp', 'parse_assignment');
  assert.deepEqual(cppA.parsed, assignments);
  assert.deepEqual(cppA.listed, assignments);
  assert.deepEqual(await declared('Assignment'), assignments);
  assert.deepEqual(Object.values(CODEBOOK_MODES), assignments, 'the page\'s codebook modes, one per assignment');
  assert.equal(await fuzzed('kAssignments'), assignments.length);
  for (const assignment of assignments) favor.codebookAttention(q, q, q, { codebook, assignment });

  const methods = refused(() => favor.createCausalState({ method: 'nope' }));
  const cppM = await cppNames('src/favor/tensor/causal_state.cpp', 'parse_state_method');
  assert.deepEqual(cppM.parsed, methods);
  assert.deepEqual(cppM.listed, methods);
  assert.deepEqual(await declared('StateMethod'), methods);
});
