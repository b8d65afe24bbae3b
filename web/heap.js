// The wasm side of a call, mirroring bindings/wasm/heap.cpp: inputs copied into the heap with
// their dims in a header before the data, outputs taken back out of it, views of the memory made
// again after it grows, and the core's errors (returned as values, never thrown through wasm)
// turned into TypeError/RangeError.
import { coreError, rangeError } from './errors.js';
import { writeOut } from './out.js';
import { lengthOf } from './validate.js';

const CACHE_LINE = 64;  // bytes
// The most the wasm heap can ever hold (-sMAXIMUM_MEMORY=4GB: 4 GiB less one 64 KiB page).
export const MAX_HEAP_BYTES = 2 ** 32 - 65536;

const outOfMemory = (fnName, bytes) =>
  rangeError(`${fnName}: out of memory: ${bytes} bytes of input do not fit in the WebAssembly heap`);


/**
 * The heap of an instantiated module: call(fnName, tensors, fn) runs fn on the tensors' heap
 * pointers, takeTensor(ptr, out) takes an output back, heapF32() views the whole memory.
 */
export function createHeap(Module) {
  // Views of the whole wasm memory, each kept while the memory's buffer stays and made again once
  // growth has replaced it. Module.HEAPF32 is not enough: in the pthreads build it stays short for
  // good once a worker thread has grown the memory (and a view made at every use cost a decode
  // step ~0.3 µs).
  const buffer = () => Module.wasmMemory?.buffer ?? Module.HEAPF32.buffer;
  const keptView = (Type) => {
    let view = null;
    return () => {
      const current = buffer();
      if (view?.buffer !== current) view = new Type(current);
      return view;
    };
  };
  const heapF32 = keptView(Float32Array), heapU8 = keptView(Uint8Array), heapF64 = keptView(Float64Array);

  // A tensor in the wasm heap carries its dims just before its data, as doubles: the rank at
  // data - 8, the dims before it (bindings/wasm/heap.cpp dims_before). A pointer is then the whole argument:
  // a dims array read through Embind cost a crossing per element, much of a small call's time.
  function writeDims(ptr, dims) {
    const heap = heapF64(), rankAt = (ptr >>> 3) - 1;
    heap[rankAt] = dims.length;
    for (let i = 0; i < dims.length; ++i) heap[rankAt - dims.length + i] = dims[i];
  }

  // Copies each tensor (Float32Array data) or mask (Uint8Array) into the wasm heap with its dims,
  // calls fn(pointers), frees, and rethrows core errors: a result of 0 from a call that makes a
  // tensor (its error kept for Module.lastError()), or an { error, message } value. A null entry
  // gives the pointer 0. Each copy starts on a cache line: malloc only guarantees 8 bytes here,
  // and the kernels' 16-byte loads of a row that straddle two lines cost up to 2x in the products.
  // The tensors are validate.js's snapshots: their dims are the call's own arrays, and their data
  // is checked against them again here, after every argument was read (a getter of a later
  // argument can still have resized or detached an earlier one's buffer).
  // The first `arriving` tensors get only their dims here: the call copies their data in itself,
  // piece by piece, through Module.favorArriving, while its helper threads start on the pieces
  // already in (bindings/wasm/heap.cpp copy_arriving_input).
  function call(fnName, tensors, fn, arriving = 0) {
    // One allocation for all of them: each tensor's dims, then its data on a cache line.
    const offsets = [];
    let total = 0;
    for (const t of tensors) {
      if (t === null) {
        offsets.push(-1);
        continue;
      }
      const count = t.dims.reduce((n, d) => n * d, 1);
      const length = lengthOf(t.data);
      if (length !== count) throw rangeError(`${t.name}: data has ${length} values but dims [${t.dims}] need ${count}`);
      const header = 8 * (t.dims.length + 1);
      const at = Math.ceil((total + header) / CACHE_LINE) * CACHE_LINE;
      offsets.push(at);
      total = at + count * (t.data instanceof Uint8Array ? 1 : 4);
    }
    // malloc takes a 32-bit size: a request past the heap's maximum would wrap to a small block
    // that the copies below overrun, so it is refused before anything is allocated or copied.
    const request = total + CACHE_LINE - 8;
    if (total && request > MAX_HEAP_BYTES) throw outOfMemory(fnName, total);
    const raw = total ? Module._malloc(request) >>> 0 : 0;  // every tensor has values: 0 means none
    if (total && raw === 0) throw outOfMemory(fnName, total);
    try {
      const base = raw + ((CACHE_LINE - (raw % CACHE_LINE)) % CACHE_LINE);
      const pointers = offsets.map((at, i) => {
        if (at < 0) return 0;
        const ptr = base + at, t = tensors[i];
        writeDims(ptr, t.dims);
        if (i < arriving) return ptr;
        if (t.data instanceof Uint8Array) heapU8().set(t.data, ptr);
        else heapF32().set(t.data, ptr >>> 2);
        return ptr;
      });
      if (arriving) {
        Module.favorArriving = (input, offset, count, to) =>
          heapF32().set(tensors[input].data.subarray(offset, offset + count), to >>> 2);
      }
      const result = fn(...pointers);
      if (result === 0) throw coreError(fnName, Module.lastError());
      if (result?.error) throw coreError(fnName, result);
      return result;
    } catch (e) {
      Module.favorResultArray = undefined;  // made for a result that did not come
      throw e;
    } finally {
      Module.favorArriving = undefined;
      if (raw) Module._free(raw);
    }
  }

  // The whole cache lines before an output's data that hold its dims (bindings/wasm/heap.cpp header_bytes).
  const outputHeaderBytes = (rank) => Math.ceil((8 * (rank + 1)) / CACHE_LINE) * CACHE_LINE;

  // Takes ownership of an output from the core (its data pointer, its dims before it): copy out
  // (into out when given, else into the array the calling thread made for it while the helper
  // threads computed, bindings/wasm/heap.cpp prepare_result_array, else into a new one), free the block it
  // starts.
  function takeTensor(ptr, out) {
    const heap = heapF64(), rankAt = (ptr >>> 3) - 1, rank = heap[rankAt];
    const dims = new Array(rank);
    let count = 1;
    for (let i = 0; i < rank; ++i) count *= dims[i] = heap[rankAt - rank + i];
    const prepared = Module.favorResultArray;
    Module.favorResultArray = undefined;
    try {
      const data = heapF32().subarray(ptr >>> 2, (ptr >>> 2) + count);
      if (!out && prepared?.length === count) out = prepared;
      return out ? writeOut(data, dims, out) : { data: data.slice(), dims };
    } finally {
      Module._free(ptr - outputHeaderBytes(rank));
    }
  }

  return { heapF32, call, takeTensor };
}
