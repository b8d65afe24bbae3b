// Argument checks shared by the API and loadFavor, with their error messages: TypeError for a
// wrong type, RangeError for a wrong value, each message naming the argument. Everything is
// checked in JS before anything reaches wasm; the core checks the rest (shapes across q/k/v,
// finite values).

export function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an Array';
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  if (typeof value === 'string') return `the string '${value}'`;
  return `${typeof value} ${String(value)}`;
}

export function checkOptions(options, name, allowed) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${name}: expected an options object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${name}.${key}: unknown option (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

export function checkBoolean(value, name) {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${name}: expected a boolean, got ${describe(value)}`);
  return value;
}

export function checkNumber(value, name) {
  if (typeof value !== 'number') throw new TypeError(`${name}: expected a number, got ${describe(value)}`);
  if (!Number.isFinite(value)) throw new RangeError(`${name}: expected a finite number, got ${value}`);
  return value;
}

export function checkInteger(value, name, min, max = Number.MAX_SAFE_INTEGER) {
  checkNumber(value, name);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name}: expected an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

export function checkScale(value, name) {
  if (value === undefined) return NaN;  // the core's default, 1/sqrt(d)
  checkNumber(value, name);
  if (value <= 0) throw new RangeError(`${name}: expected a number > 0, got ${value}`);
  return value;
}

export function checkChoice(value, name, choices, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw new TypeError(`${name}: expected one of '${choices.join("', '")}', got ${describe(value)}`);
  if (!choices.includes(value)) throw new RangeError(`${name}: expected one of '${choices.join("', '")}', got '${value}'`);
  return value;
}

export function checkTensor(tensor, name) {
  if (tensor === null || typeof tensor !== 'object' || ArrayBuffer.isView(tensor) || Array.isArray(tensor)) {
    throw new TypeError(`${name}: expected a tensor { data: Float32Array, dims: number[] }, got ${describe(tensor)}`);
  }
  const { data, dims } = tensor;
  if (!(data instanceof Float32Array)) {
    throw new TypeError(`${name}.data: expected a Float32Array, got ${describe(data)}`);
  }
  if (!Array.isArray(dims)) throw new TypeError(`${name}.dims: expected an array of integers, got ${describe(dims)}`);
  if (dims.length < 2) throw new RangeError(`${name}.dims: expected at least 2 dims ([..., rows, cols]), got [${dims}]`);
  let count = 1;
  for (const d of dims) {
    if (typeof d !== 'number') throw new TypeError(`${name}.dims: expected integers, got ${describe(d)}`);
    if (!Number.isInteger(d) || d < 1) throw new RangeError(`${name}.dims: expected integers >= 1, got [${dims}]`);
    count *= d;
  }
  if (data.length !== count) {
    throw new RangeError(`${name}: data has ${data.length} values but dims [${dims}] need ${count}`);
  }
  return tensor;
}

// A key mask { data: Uint8Array, dims: [..., S] }: 1 = attend, 0 = ignore (values checked in wasm).
export function checkMask(mask, name = 'keyMask') {
  if (mask === null || typeof mask !== 'object' || ArrayBuffer.isView(mask) || Array.isArray(mask)) {
    throw new TypeError(`${name}: expected a mask { data: Uint8Array, dims: number[] } (1 = attend, 0 = ignore), got ${describe(mask)}`);
  }
  const { data, dims } = mask;
  if (!(data instanceof Uint8Array)) throw new TypeError(`${name}.data: expected a Uint8Array (1 = attend, 0 = ignore), got ${describe(data)}`);
  if (!Array.isArray(dims)) throw new TypeError(`${name}.dims: expected an array of integers, got ${describe(dims)}`);
  if (dims.length < 1) throw new RangeError(`${name}.dims: expected at least 1 dim ([..., S]), got []`);
  let count = 1;
  for (const d of dims) {
    if (typeof d !== 'number') throw new TypeError(`${name}.dims: expected integers, got ${describe(d)}`);
    if (!Number.isInteger(d) || d < 1) throw new RangeError(`${name}.dims: expected integers >= 1, got [${dims}]`);
    count *= d;
  }
  if (data.length !== count) throw new RangeError(`${name}: data has ${data.length} values but dims [${dims}] need ${count}`);
  return mask;
}
