// Shared by the worker API's tests (loadFavor({ worker: true })): outcomes of a call in either
// API, their comparison, a guard that no worker call throws synchronously or returns anything
// but a Promise, a time limit, and the process's thread count. Not a test file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

/** { value } or { error } of fn(), whether it throws, rejects, returns or resolves. */
export async function outcome(fn) {
  try {
    return { value: await fn() };
  } catch (error) {
    return { error };
  }
}

/** Rejects with a clear message if promise has not settled within ms (a hang is a failure). */
export function within(promise, ms, label) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label}: still pending after ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/**
 * The worker API (or a proxy it made) behind a guard: every method call and every getter that
 * is not a plain setting must return a Promise without throwing; violations are pushed to
 * `violations`. Objects the Promises resolve to are guarded too. Methods run on the real object,
 * and guarded objects passed as arguments (or as an options object's data properties) are passed
 * as the real ones: the proxies' private fields need it.
 */
export function strict(target, violations, where = 'favor') {
  const plain = new Set(['info', 'disposed', 'method', 'dim', 'features', 'numFeatures', 'kernel', 'sampling', 'epsilon', 'rho', 'then']);
  const guardResult = (result, name) => {
    if (!(result instanceof Promise)) {
      violations.push(`${where}.${name} returned ${typeof result}, not a Promise`);
      return result;
    }
    return result.then((value) => (value && typeof value === 'object' && typeof value.dispose === 'function' && !('data' in value) ? strict(value, violations, name) : value));
  };
  const guarded = new Proxy(target, {
    get(object, name) {
      if (typeof name === 'symbol' || plain.has(name)) {
        const value = Reflect.get(object, name, object);
        return typeof value === 'function' ? value.bind(object) : value;
      }
      let value;
      try {
        value = Reflect.get(object, name, object);
      } catch (error) {
        violations.push(`${where}.${name} threw synchronously: ${error?.message}`);
        throw error;
      }
      if (typeof value !== 'function') return guardResult(value, name);
      return (...args) => {
        let result;
        try {
          result = value.apply(object, args.map(unguarded));
        } catch (error) {
          violations.push(`${where}.${name}() threw synchronously: ${error?.message}`);
          throw error;
        }
        return guardResult(result, `${name}()`);
      };
    },
  });
  guards.set(guarded, target);
  return guarded;
}

const guards = new WeakMap();  // strict()'s guards: the object each one guards
// An argument as the API must see it: a guard's object; an object holding guards among its data
// properties (or its prototype's: inherited options), copied with theirs (getters are copied as
// getters, never called here).
function unguarded(arg) {
  if (guards.has(arg)) return guards.get(arg);
  if (arg === null || typeof arg !== 'object') return arg;
  let proto, descriptors;
  try {
    proto = Object.getPrototypeOf(arg);
    descriptors = Object.getOwnPropertyDescriptors(arg);
  } catch {
    return arg;  // a hostile Proxy: the API meets its traps itself
  }
  const base = proto === null || proto === Object.prototype ? proto : unguarded(proto);
  if (base === proto && !Object.values(descriptors).some((d) => guards.has(d.value))) return arg;
  for (const d of Object.values(descriptors)) if (guards.has(d.value)) d.value = guards.get(d.value);
  return Object.create(base, descriptors);
}

/**
 * Asserts the worker's outcome equals the synchronous one: the same error class and message, or
 * equal values (tensors bit for bit, numbers by Object.is).
 */
export function assertSameOutcome(actual, expected, label) {
  if (expected.error) {
    assert.ok(actual.error, `${label}: the synchronous call threw ${expected.error.constructor.name}: ${expected.error.message}, the worker call resolved`);
    assert.equal(actual.error.constructor, expected.error.constructor,
      `${label}: ${actual.error.constructor.name} (${actual.error.message}) instead of ${expected.error.constructor.name}`);
    assert.equal(actual.error.message, expected.error.message, `${label}: message`);
    return;
  }
  assert.ok(!actual.error, `${label}: the synchronous call returned, the worker call rejected with ${actual.error?.constructor.name}: ${actual.error?.message}`);
  assertSameValue(actual.value, expected.value, label);
}

function assertSameValue(actual, expected, label) {
  if (expected && typeof expected === 'object' && expected.data instanceof Float32Array) {
    assert.ok(actual?.data instanceof Float32Array, `${label}: not a tensor`);
    assert.deepEqual(actual.dims, expected.dims, `${label}: dims`);
    assert.equal(actual.data.length, expected.data.length, `${label}: length`);
    const a = new Uint32Array(actual.data.buffer, actual.data.byteOffset, actual.data.length);
    const b = new Uint32Array(expected.data.buffer, expected.data.byteOffset, expected.data.length);
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) assert.fail(`${label}: differs at ${i}: ${actual.data[i]} vs ${expected.data[i]}`);
  } else if (expected && typeof expected === 'object') {
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${label}: keys`);
    for (const key of Object.keys(expected)) assertSameValue(actual[key], expected[key], `${label}.${key}`);
  } else {
    assert.ok(Object.is(actual, expected), `${label}: ${actual} vs ${expected}`);
  }
}

/** Threads of this process now (Linux): a worker_threads worker is one while it runs. */
export function threadCount() {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
}

/**
 * The process's thread count once it has stopped changing (the same over `quietMs`, polled for
 * at most ms): a baseline to count a worker's threads from. A thread of the process that is
 * ending when the baseline is read (seen once in a loaded CI run; not a worker's: Node joins a
 * worker's thread before terminate() resolves) ends later and reads as a thread the test's
 * worker lacks.
 */
export async function settledThreadCount(quietMs = 300, ms = 5000) {
  const end = Date.now() + ms;
  let count = threadCount(), since = Date.now();
  while (Date.now() - since < quietMs && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = threadCount();
    if (now !== count) [count, since] = [now, Date.now()];
  }
  return count;
}

/** Polls until done() holds (or ms pass); resolves to done(). */
export async function eventually(done, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await done()) && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20));
  return done();
}
