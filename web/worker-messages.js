// Arguments of loadFavor({ worker: true }) calls on their way to the worker. postMessage's
// structured clone alone would change what the worker's synchronous API sees, and so its errors:
// it copies a typed array's whole buffer (a small view into a large one copies all of it), throws
// DataCloneError on functions and symbols, drops class prototypes (and getters such as a tensor
// class's `data`). encodeArgs makes a cloneable copy that the worker's decodeArgs turns back into
// values the synchronous API describes and validates exactly as it would the caller's own.

import { READ_KEYS } from './operations.js';
import { lengthOf, typedArrayTag } from './validate.js';

// Defined, not assigned: an own key named __proto__ is a property like any other (assigned, it
// would set the copy's prototype).
const define = (target, key, value) => Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });

const HANDLE = '\u0000favorHandle';   // { [HANDLE]: id, kind }: an object living in the worker (id 0: disposed)
const STAND_IN = '\u0000favorStandIn'; // { [STAND_IN]: 'function' | 'symbol' | 'object' | 'output', ... }

/**
 * A cloneable copy of args and the buffers to transfer. handleOf(value) returns
 * { id, kind } for a proxy of this instance (id 0 once disposed), or undefined.
 * Typed arrays: one that spans its whole ArrayBuffer is moved when `transfer`, else copied; a
 * view into a larger buffer is copied by its own bytes (never moving the caller's larger
 * buffer); one on a SharedArrayBuffer is copied (a snapshot, as the synchronous API takes); an
 * empty or detached one (an input already moved by an earlier call) becomes an empty array of its
 * type. A buffer is transferred once however many inputs use it. `output`: { options, out } where
 * a call has an options.out (own or inherited): it travels as an array of its length made in the
 * worker (which computes into it and moves it back), is never read again here, and its buffer is
 * never moved (the result is written back into it), inputs on it being copied.
 */
export function encodeArgs(args, { transfer = false, handleOf, output }) {
  const transferList = [];
  const keep = output && bytesOf(output.out).buffer;
  const done = new Map();  // shared references and cycles stay shared in the copy

  const encode = (value) => {
    if (typeof value === 'function') return { [STAND_IN]: 'function', text: String(value) };
    if (typeof value === 'symbol') return { [STAND_IN]: 'symbol', description: value.description };
    if (value === null || typeof value !== 'object') return value;
    if (done.has(value)) return done.get(value);
    const handle = handleOf(value);
    if (handle) return { [HANDLE]: handle.id, kind: handle.kind };
    if (ArrayBuffer.isView(value)) {
      const copy = named(value, encodeView(value, transfer && bytesOf(value).buffer !== keep, transferList));
      done.set(value, copy);
      return copy;
    }
    if (value instanceof ArrayBuffer) return value;
    if (Array.isArray(value)) {
      const out = [];
      done.set(value, out);
      for (let i = 0; i < value.length; i++) out.push(encode(value[i]));
      return out;
    }
    // The API reads an object's keys through its prototype chain, getters included, and checks
    // only its own enumerable ones against the known keys. So what it reads besides those (keys
    // inherited, as Object.create(defaults) gives, a class's getters, keys not enumerable) is
    // read here the same way and kept apart, to stand on a prototype in the worker's copy.
    const own = Object.keys(value), ownSet = new Set(own), hidden = [];
    for (const key in value) if (!ownSet.has(key)) hidden.push(key);
    for (const key of READ_KEYS) if (!ownSet.has(key) && !hidden.includes(key) && key in value) hidden.push(key);
    const proto = Object.getPrototypeOf(value);
    const props = {};
    // A class instance keeps its name (the API says "got an object (Name)").
    const out = (proto === Object.prototype || proto === null) && !hidden.length ? props
      : { [STAND_IN]: 'object', name: value.constructor?.name ?? 'Object', props, inherited: {} };
    done.set(value, out);
    const read = (key) => (value === output?.options && key === 'out' ? { [STAND_IN]: 'output', length: lengthOf(output.out) }
      : encode(value[key]));
    for (const key of own) define(props, key, read(key));
    for (const key of hidden) define(out.inherited, key, read(key));
    return out;
  };
  return { args: args.map(encode), transferList };
}

// The built-in class of a typed array or DataView (Float32Array for a subclass of it, Uint8Array
// for a Node Buffer): what structured clone makes of it on the other side.
// (Read through the engine's own getter: an own Symbol.toStringTag property does not count.)
const intrinsicOf = (view) => {
  const tag = typedArrayTag(view);
  return tag === undefined ? DataView : globalThis[tag];
};

// A view's buffer and bytes as the engine keeps them (own properties of the same names could
// otherwise point the copy elsewhere).
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
const getters = (prototype) => ['buffer', 'byteOffset', 'byteLength'].map((key) => Object.getOwnPropertyDescriptor(prototype, key).get);
const VIEW_GETTERS = { typed: getters(TypedArrayPrototype), data: getters(DataView.prototype) };
export function bytesOf(view) {
  const [buffer, byteOffset, byteLength] = VIEW_GETTERS[typedArrayTag(view) === undefined ? 'data' : 'typed'].map((get) => get.call(view));
  return { buffer, byteOffset, byteLength };
}

function encodeView(view, transfer, transferList) {
  const { buffer, byteOffset, byteLength } = bytesOf(view);
  const Intrinsic = intrinsicOf(view);
  if (byteLength === 0) return new Intrinsic(new ArrayBuffer(0));
  const shared = typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer;
  if (!transfer || shared || byteOffset !== 0 || byteLength !== buffer.byteLength) {
    // A copy of only the view's bytes, in an ArrayBuffer of its own, moved to the worker: the
    // caller's buffer is never moved or shared, and moving our copy spares the message its own
    // copying (Chromium's structured clone of the inputs was many times slower than a slice). Copied
    // through a plain Uint8Array: a subclass's slice() need not copy (a Node Buffer's is a view
    // of the same memory), and a plain one's makes an ArrayBuffer even from a SharedArrayBuffer.
    const bytes = new Uint8Array(byteLength);
    bytes.set(new Uint8Array(buffer, byteOffset, byteLength));
    transferList.push(bytes.buffer);
    return Intrinsic === DataView ? new DataView(bytes.buffer) : new Intrinsic(bytes.buffer);
  }
  if (!transferList.includes(buffer)) transferList.push(buffer);
  return view;
}

// A subclass instance (a Node Buffer, a library's Float32Array subclass) keeps its class name, as
// the synchronous API's errors name it ("got a Buffer"); structured clone alone would not.
function named(view, encoded) {
  const name = view.constructor?.name;
  return intrinsicOf(view).name === name || typeof name !== 'string' ? encoded : { [STAND_IN]: 'view', name, view: encoded };
}

/**
 * The worker's side: args decoded in place (they are the worker's own copy). resolve(id, kind)
 * returns the object a handle names (for id 0, a disposed one of that kind).
 */
export function decodeArgs(args, resolve) {
  const done = new Map();  // each object decoded once: shared references and cycles survive
  const decode = (value) => {
    if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value;
    if (HANDLE in value) return resolve(value[HANDLE], value.kind);
    if (done.has(value)) return done.get(value);
    if (STAND_IN in value) return standIn(value, decode, done);
    done.set(value, value);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = decode(value[i]);
    } else {
      for (const key of Object.keys(value)) value[key] = decode(value[key]);
    }
    return value;
  };
  return args.map(decode);
}

const prototypes = new Map();

// A value that describes itself as the caller's did: String(fn) is its source text, a symbol
// has its description, an object has its constructor's name, its own properties and, on a
// prototype of its own, the enumerable ones it inherited.
function standIn(value, decode, done) {
  if (value[STAND_IN] === 'function') {
    const fn = function standIn() {};
    Object.defineProperty(fn, 'toString', { value: () => value.text });
    return fn;
  }
  if (value[STAND_IN] === 'symbol') return Symbol(value.description);
  if (value[STAND_IN] === 'output') return new Float32Array(value.length);
  if (value[STAND_IN] === 'view') return namedView(value.name, value.view);
  const { name } = value;
  if (!prototypes.has(name)) prototypes.set(name, { constructor: { name } });
  const inherited = Object.keys(value.inherited);
  const prototype = inherited.length ? Object.create(prototypes.get(name)) : prototypes.get(name);
  const object = Object.create(prototype);
  done.set(value, object);
  for (const key of inherited) define(prototype, key, decode(value.inherited[key]));
  for (const [key, v] of Object.entries(value.props)) define(object, key, decode(v));
  return object;
}

const viewClasses = new Map();

// The worker's copy of a subclass instance: its bytes, in a subclass of the same built-in class
// with the caller's class name (never the caller's class itself, which did not travel).
function namedView(name, view) {
  const Intrinsic = view.constructor, key = `${Intrinsic.name} ${name}`;
  if (!viewClasses.has(key)) viewClasses.set(key, { [name]: class extends Intrinsic {} }[name]);
  const Named = viewClasses.get(key);
  return Intrinsic === DataView ? new Named(view.buffer, view.byteOffset, view.byteLength)
    : new Named(view.buffer, view.byteOffset, view.length);
}
