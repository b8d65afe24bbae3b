// web/operations.js, the table of calls and objects that the worker client and host are made
// from, against the two things it must agree with: the hand-written declarations in
// web/index.d.ts (every call, method and getter of the table declared on the synchronous and the
// worker interfaces with the table's parameters, options and result, and nothing declared there
// missing from the table), and the objects loadFavor() and loadFavor({ worker: true }) return.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { FIT_OPTIONS, LIFECYCLE, OBJECTS, OPERATIONS } from '../../web/operations.js';

const declarations = parseInterfaces(await readFile(new URL('../../web/index.d.ts', import.meta.url), 'utf8'));

// The interfaces of index.d.ts by name: Map(member name -> its declarations (overloads)), each
// { method, params (names), type (a method's result, a property's type) }. Members of the
// interfaces it extends included; [Symbol.dispose] left out. Enough TypeScript for index.d.ts.
function parseInterfaces(text) {
  const source = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const bodies = new Map();
  for (const m of source.matchAll(/\binterface (\w+)\s*(?:extends ([^{]+))?\{/g)) {
    const start = m.index + m[0].length;
    const end = closing(source, start - 1);
    bodies.set(m[1], { bases: m[2] ? splitTopLevel(m[2], ',').map((b) => b.trim()) : [], body: source.slice(start, end) });
  }
  const parsed = new Map();
  const members = (name) => {
    if (parsed.has(name)) return parsed.get(name);
    const { bases, body } = bodies.get(name);
    const result = new Map();
    for (const base of bases) if (bodies.has(base)) for (const [key, decls] of members(base)) result.set(key, [...decls]);
    for (const text of splitTopLevel(body, ';').map((s) => s.trim()).filter(Boolean)) {
      const member = parseMember(text);
      if (member) result.set(member.name, [...(result.get(member.name) ?? []), member]);
    }
    parsed.set(name, result);
    return result;
  };
  return new Map([...bodies.keys()].map((name) => [name, members(name)]));
}

function parseMember(text) {
  const m = /^(?:readonly\s+)?(\[[^\]]+\]|\w+)\??/.exec(text);
  if (m[1].startsWith('[')) return null;
  let rest = text.slice(m[0].length).trim();
  if (rest.startsWith('(')) {
    const end = closing(rest, 0);
    const parts = splitTopLevel(rest.slice(1, end), ',').map((p) => /^\s*(\w+)\??\s*:\s*([\s\S]*?)\s*$/.exec(p)).filter(Boolean);
    rest = rest.slice(end + 1).trim();
    return { name: m[1], method: true, params: parts.map((p) => p[1]), paramTypes: parts.map((p) => p[2]), type: rest.replace(/^:\s*/, '').trim() };
  }
  return { name: m[1], method: false, type: rest.replace(/^:\s*/, '').trim() };
}

// The index of the bracket closing the one at `open`.
function closing(text, open) {
  for (let i = open, depth = 0; i < text.length; i++) {
    if ('({[<'.includes(text[i]) && !(text[i] === '<' && text[i - 1] === '=')) depth++;
    else if (')}]>'.includes(text[i]) && !(text[i] === '>' && text[i - 1] === '=')) depth--;
    if (depth === 0) return i;
  }
  throw new Error(`unbalanced brackets from: ${text.slice(open, open + 60)}`);
}

// text split at each separator outside brackets.
function splitTopLevel(text, separator) {
  const parts = [];
  let depth = 0, from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i], arrow = text[i - 1] === '=';
    if ('({[<'.includes(c) && !arrow) depth++;
    else if (')}]>'.includes(c) && !(c === '>' && arrow)) depth--;
    else if (c === separator && depth === 0) {
      parts.push(text.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(text.slice(from));
  return parts;
}

// index.d.ts's type aliases by name: { param (a generic's, or undefined), body }.
const aliases = new Map();
{
  const source = (await readFile(new URL('../../web/index.d.ts', import.meta.url), 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  for (const m of source.matchAll(/\btype (\w+)(?:<(\w+)>)?\s*=/g)) {
    const rest = source.slice(m.index + m[0].length);
    aliases.set(m[1], { param: m[2], body: splitTopLevel(rest, ';')[0].trim() });
  }
}

// The keys an object of a declared type may have: interfaces (with what they extend), aliases,
// unions and intersections, Omit<T, 'a' | 'b'>, generic aliases and object literals. Enough
// TypeScript for index.d.ts's option types.
function keysOfType(type) {
  type = type.trim();
  const union = splitTopLevel(type, '|').map((t) => t.trim()).filter(Boolean);
  if (union.length > 1) return sorted(union.flatMap(keysOfType));
  const both = splitTopLevel(type, '&');
  if (both.length > 1) return sorted(both.flatMap(keysOfType));
  if (type.startsWith('{')) {
    return sorted(splitTopLevel(type.slice(1, closing(type, 0)), ';').flatMap((t) => t.split(/,(?![^<{(]*[>})])/))
      .map((t) => /^\s*(\w+)\??\s*:/.exec(t)?.[1]).filter(Boolean));
  }
  const generic = /^(\w+)<([\s\S]*)>$/.exec(type);
  if (generic) {
    const [first, ...rest] = splitTopLevel(generic[2], ',');
    if (generic[1] === 'Omit') {
      const omitted = [...rest.join(',').matchAll(/'(\w+)'/g)].map((m) => m[1]);
      return keysOfType(first).filter((key) => !omitted.includes(key));
    }
    const alias = aliases.get(generic[1]);
    assert.ok(alias?.param, `index.d.ts declares the generic ${generic[1]}`);
    return keysOfType(alias.body.replace(new RegExp(`\\b${alias.param}\\b`, 'g'), first.trim()));
  }
  if (aliases.has(type)) return keysOfType(aliases.get(type).body);
  return sorted([...declared(type).keys()]);
}

const sorted = (names) => [...new Set(names)].sort();
const INSTANCE = { sync: 'Favor', async: 'FavorAsync' };
const interfaceOf = (kind, async) => OBJECTS[kind].name + (async ? 'Async' : '');
const objectNames = new Set(Object.keys(OBJECTS).flatMap((kind) => [interfaceOf(kind, false), interfaceOf(kind, true)]));

function declared(name) {
  assert.ok(declarations.has(name), `index.d.ts declares interface ${name}`);
  return declarations.get(name);
}

// What index.d.ts must say a call of the table returns.
function checkResult(type, returns, async, where) {
  let inner = type;
  if (async) {
    assert.match(type, /^Promise<.*>$/, `${where}: returns a Promise in the worker API`);
    inner = type.slice('Promise<'.length, -1);
  }
  if (returns === 'tensor') assert.equal(inner, 'Tensor', `${where}: returns a Tensor`);
  else if (returns === 'this') assert.equal(inner, 'this', `${where}: returns this`);
  else if (returns === 'value') assert.ok(inner !== 'Tensor' && !objectNames.has(inner), `${where}: returns a plain value, declared ${type}`);
  else assert.equal(inner, interfaceOf(returns, async), `${where}: returns a ${OBJECTS[returns].name}`);
}

function checkMethod(decls, spec, async, where) {
  assert.ok(decls, `${where} is declared in index.d.ts`);
  for (const decl of decls) {
    assert.ok(decl.method, `${where} is declared as a method`);
    assert.deepEqual(decl.params, spec.args, `${where}: the table's parameters`);
    checkResult(decl.type, spec.returns, async, where);
  }
}

for (const async of [false, true]) {
  const instance = async ? INSTANCE.async : INSTANCE.sync;

  test(`${instance} in index.d.ts declares exactly the table's calls`, () => {
    const members = declared(instance);
    assert.deepEqual(sorted([...members.keys()]), sorted([...Object.keys(OPERATIONS), ...LIFECYCLE.instance]),
      `${instance}'s members against OPERATIONS (web/operations.js) and LIFECYCLE.instance`);
    for (const [op, spec] of Object.entries(OPERATIONS)) checkMethod(members.get(op), spec, async, `${instance}.${op}`);
  });

  for (const [kind, { settings, getters, methods }] of Object.entries(OBJECTS)) {
    const name = interfaceOf(kind, async);
    test(`${name} in index.d.ts declares exactly the table's settings, getters and methods of ${kind}`, () => {
      const members = declared(name);
      assert.deepEqual(sorted([...members.keys()]), sorted([...settings, ...getters, ...Object.keys(methods), ...LIFECYCLE.object]),
        `${name}'s members against OBJECTS.${kind} (web/operations.js) and LIFECYCLE.object`);
      for (const property of [...settings, ...getters]) {
        const [decl] = members.get(property);
        assert.ok(!decl.method, `${name}.${property} is declared as a property`);
        // In the worker a setting is copied to the proxy; a getter is a call to the worker.
        if (async) assert.equal(/^Promise</.test(decl.type), getters.includes(property), `${name}.${property}: ${decl.type}`);
      }
      for (const [method, spec] of Object.entries(methods)) checkMethod(members.get(method), spec, async, `${name}.${method}`);
    });
  }
}

// The options each call checks (the table's `options`, which the worker also reads through the
// prototype chain) are those its declared options type has, in both APIs: every overload of it
// together (matmul with a packed matrix takes all but transposeB).
for (const async of [false, true]) {
  test(`${async ? INSTANCE.async : INSTANCE.sync} in index.d.ts declares exactly the options the table lists`, () => {
    const calls = [...Object.entries(OPERATIONS).map(([op, spec]) => [declared(INSTANCE[async ? 'async' : 'sync']).get(op), spec, op]),
      ...Object.values(OBJECTS).flatMap((kind) => Object.entries(kind.methods).map(([method, spec]) =>
        [declared(interfaceOf(Object.keys(OBJECTS).find((k) => OBJECTS[k] === kind), async)).get(method), spec, `${kind.name}.${method}`]))];
    let checked = 0;
    for (const [decls, spec, where] of calls) {
      const at = spec.args.indexOf('options');
      assert.equal(at >= 0, Boolean(spec.options), `${where}: options listed exactly where the call takes options`);
      if (at < 0) continue;
      const declaredKeys = sorted(decls.flatMap((decl) => keysOfType(decl.paramTypes[at])));
      assert.deepEqual(sorted(spec.options), declaredKeys, `${where}: the table's options against index.d.ts`);
      checked++;
    }
    assert.equal(checked, 14);
    assert.deepEqual(sorted(FIT_OPTIONS), keysOfType(declared('FeatureMapOptions').get('fit')[0].type), 'createFeatureMap options.fit');
  });
}

test('keysOfType reads aliases, unions, intersections, Omit and generics', () => {
  assert.deepEqual(keysOfType("Omit<MatmulOptions, 'transposeB'>"), ['bias', 'out']);
  assert.deepEqual(keysOfType('{ scale?: number }'), ['scale']);
  assert.deepEqual(keysOfType('WithAsyncMap<FavorMatrixOptions>'), sorted(keysOfType('FavorMatrixOptions')));
  assert.ok(keysOfType('CausalStateOptions').includes('window'));
  assert.ok(keysOfType('AttentionOptions').includes('out'), 'members of the interface it extends');
});

test('the parser reads index.d.ts: overloads, extended interfaces, optional parameters', () => {
  const matmul = declared('Favor').get('matmul');
  assert.equal(matmul.length, 2);
  assert.deepEqual(matmul.map((d) => d.params), [['a', 'b', 'options'], ['a', 'b', 'options']]);
  assert.equal(declared('FeatureMap').get('dim')[0].type, 'number');
  assert.deepEqual(declared('FavorAsync').get('codebookFromFeatureMap')[0].params, ['featureMap', 'options']);
});

// The string-named members of an object and its prototypes, as a caller sees them.
function publicMembers(object) {
  const names = new Set();
  for (let o = object; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Object.getOwnPropertyNames(o)) if (key !== 'constructor') names.add(key);
  }
  return [...names];
}

// The table against what the loaders return: the same calls, and objects of each kind with the
// table's members. One small object of each kind, made by the call that returns that kind.
const SAMPLES = {
  featureMap: [{ dim: 2, features: 2 }],
  state: [{ method: 'exact' }],
  matrix: [{ data: new Float32Array(4), dims: [2, 2] }],
};

describe('the loaders', () => {
  let sync, worker;
  before(async () => {
    [sync, worker] = await Promise.all([loadFavor({ threads: 1 }), loadFavor({ worker: true, threads: 1 })]);
  });
  after(() => worker?.dispose());

  for (const async of [false, true]) {
    test(`loadFavor(${async ? '{ worker: true }' : ''}) returns the table's calls and objects`, async () => {
      const favor = async ? worker : sync;
      assert.deepEqual(sorted(Object.keys(favor)), sorted([...Object.keys(OPERATIONS), ...LIFECYCLE.instance]));
      for (const op of Object.keys(OPERATIONS)) assert.equal(typeof favor[op], 'function', op);
      for (const [kind, { name, settings, getters, methods }] of Object.entries(OBJECTS)) {
        const [op] = Object.entries(OPERATIONS).find(([, spec]) => spec.returns === kind) ?? [];
        assert.ok(op, `a call returns a ${kind}`);
        assert.ok(SAMPLES[kind], `SAMPLES has the arguments of ${op}`);
        const object = await favor[op](...SAMPLES[kind]);
        assert.equal(object.constructor.name, name, `${op} returns a ${name}`);
        for (const setting of settings) {
          assert.ok(setting in object, `${name}.${setting}`);
          if (async) assert.ok(Object.hasOwn(object, setting), `the proxy's ${setting} is a copy`);
        }
        for (const getter of getters) {
          const value = object[getter];
          assert.equal(value instanceof Promise, async, `${name}.${getter} is a ${async ? 'Promise' : 'value'}`);
          await value;
        }
        for (const method of Object.keys(methods)) assert.equal(typeof object[method], 'function', `${name}.${method}`);
        for (const member of LIFECYCLE.object) assert.ok(member in object, `${name}.${member}`);
        // and no member the table does not list (nothing internal a caller could reach)
        assert.deepEqual(sorted(publicMembers(object)), sorted([...settings, ...getters, ...Object.keys(methods), ...LIFECYCLE.object]),
          `${name}'s members`);
        await object.dispose();
        assert.equal(object.disposed, true);
      }
    });
  }
});
