// options.out of the calls that compute a tensor (`out` in operations.js): a Float32Array the
// output is written into and returned as the result's data, so that repeated calls allocate
// nothing (a fresh array page-faults on every call, a cost of its own for large outputs). Its type
// is checked here, after every other argument; its length (the output's size) by the core once it
// knows the output's dims, before anything is computed or a causal state changes (outLength); it
// is written only when the call succeeds. It may be an input's array: inputs are copied into the
// wasm heap before the call.
import { typeError } from './errors.js';
import { describe, isTypedArray, lengthOf } from './validate.js';

export function checkOut(out, name = 'out') {
  if (out !== undefined && !isTypedArray(out, Float32Array)) {
    throw typeError(`${name}: expected a Float32Array to write the output into, got ${describe(out)}`);
  }
  return out;
}

export const outLength = (out) => (out ? lengthOf(out) : NaN);  // NaN: no out

// The output (data with its dims, of out's length) written into out, as the result.
export function writeOut(data, dims, out) {
  out.set(data);
  return { data: out, dims };
}
