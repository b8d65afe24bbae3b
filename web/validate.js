// Argument checks shared by the API and loadFavor, with their error messages: TypeError for a
// wrong type, RangeError for a wrong value, each message naming the argument (the call's name is
// put before it by errors.js). Everything is checked in JS before anything reaches wasm; the core
// checks the rest (shapes across q/k/v, finite values).
import { rangeError, typeError } from './errors.js';

export function describe(value) {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an Array';
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  if (typeof value === 'string') return `the string '${value}'`;
  return `${typeof value} ${String(value)}`;
}

export function checkOptions(options, name, allowed) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw typeError(`${name}: expected an options object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw typeError(`${name}.${key}: unknown option (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

export function checkBoolean(value, name) {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw typeError(`${name}: expected a boolean, got ${describe(value)}`);
  return value;
}

export function checkNumber(value, name) {
  if (typeof value !== 'number') throw typeError(`${name}: expected a number, got ${describe(value)}`);
  if (!Number.isFinite(value)) throw rangeError(`${name}: expected a finite number, got ${value}`);
  return value;
}

export function checkInteger(value, name, min, max = Number.MAX_SAFE_INTEGER) {
  checkNumber(value, name);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw rangeError(`${name}: expected an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

export function checkScale(value, name) {
  if (value === undefined) return NaN;  // the core's default, 1/sqrt(d)
  checkNumber(value, name);
  if (value <= 0) throw rangeError(`${name}: expected a number > 0, got ${value}`);
  return value;
}

export function checkChoice(value, name, choices, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw typeError(`${name}: expected one of '${choices.join("', '")}', got ${describe(value)}`);
  if (!choices.includes(value)) throw rangeError(`${name}: expected one of '${choices.join("', '")}', got '${value}'`);
  return value;
}

// Each tensor or mask argument is read once: checkTensor and checkMask return a snapshot
// { name, data, dims } (dims copied into an array of the call's own), and the call checks and
// copies that snapshot, never the caller's object again. A getter or Proxy that answers
// differently on a second read (to slip a longer array or other dims past the checks) is then
// never asked twice.
function snapshot(value, name) {
  const { data, dims } = value;
  return { data, dims, name };
}

// A typed array's class and length as the engine keeps them: an own `length` property, or an
// object made from Float32Array.prototype, would otherwise pass the checks with a length the
// copy into the wasm heap (which uses the real one) does not keep to.
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
const tagGetter = Object.getOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag).get;
const lengthGetter = Object.getOwnPropertyDescriptor(TypedArrayPrototype, 'length').get;

/** Whether value is a real typed array of Type (a subclass too, a Node Buffer for Uint8Array). */
export const isTypedArray = (value, Type) => value instanceof Type && tagGetter.call(value) === Type.name;
/** The built-in class name of a real typed array ('Uint8Array' for a Node Buffer), else undefined. */
export const typedArrayTag = (value) => tagGetter.call(value);
/** The length of a real typed array (0 once its buffer is detached). */
export const lengthOf = (view) => lengthGetter.call(view);

// The dims array read once, element by element, and checked on the way: [..dims] (an iterator a
// Proxy or subclass can change) and a second read are both avoided.
function readDims(dims, name, minRank, got) {
  if (!Array.isArray(dims)) throw typeError(`${name}.dims: expected an array of integers, got ${describe(dims)}`);
  const rank = dims.length;
  if (rank < minRank) throw rangeError(`${name}.dims: ${got(Array.from({ length: rank }, (_, i) => dims[i]))}`);
  // Checked as they are read: a sparse array of length 2^32 - 1 fails at its first hole.
  const copy = [];
  let count = 1;
  for (let i = 0; i < rank; i++) {
    const d = dims[i];
    if (typeof d !== 'number') throw typeError(`${name}.dims: expected integers, got ${describe(d)}`);
    if (!Number.isInteger(d) || d < 1) throw rangeError(`${name}.dims: expected integers >= 1, got [${dims}]`);
    copy.push(d);
    count *= d;
  }
  return { copy, count };
}

export function checkTensor(tensor, name) {
  if (tensor === null || typeof tensor !== 'object' || ArrayBuffer.isView(tensor) || Array.isArray(tensor)) {
    throw typeError(`${name}: expected a tensor { data: Float32Array, dims: number[] }, got ${describe(tensor)}`);
  }
  const t = snapshot(tensor, name);
  if (!isTypedArray(t.data, Float32Array)) {
    throw typeError(`${name}.data: expected a Float32Array, got ${describe(t.data)}`);
  }
  const { copy, count } = readDims(t.dims, name, 2, (dims) => `expected at least 2 dims ([..., rows, cols]), got [${dims}]`);
  t.dims = copy;
  if (lengthOf(t.data) !== count) {
    throw rangeError(`${name}: data has ${lengthOf(t.data)} values but dims [${copy}] need ${count}`);
  }
  return t;
}

// A key mask { data: Uint8Array, dims: [..., S] }: 1 = attend, 0 = ignore (values checked in wasm).
export function checkMask(mask, name = 'keyMask') {
  if (mask === null || typeof mask !== 'object' || ArrayBuffer.isView(mask) || Array.isArray(mask)) {
    throw typeError(`${name}: expected a mask { data: Uint8Array, dims: number[] } (1 = attend, 0 = ignore), got ${describe(mask)}`);
  }
  const t = snapshot(mask, name);
  if (!isTypedArray(t.data, Uint8Array)) throw typeError(`${name}.data: expected a Uint8Array (1 = attend, 0 = ignore), got ${describe(t.data)}`);
  const { copy, count } = readDims(t.dims, name, 1, () => 'expected at least 1 dim ([..., S]), got []');
  t.dims = copy;
  if (lengthOf(t.data) !== count) throw rangeError(`${name}: data has ${lengthOf(t.data)} values but dims [${copy}] need ${count}`);
  return t;
}
