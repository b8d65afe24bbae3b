// Post-link step of the relaxed-SIMD build: rewrites the pre-standard fused multiply-add opcode
// that clang 14 emits for __builtin_wasm_fma_f32x4 (0xfd 175, accepted by Emscripten 3.1.6's
// binaryen) into the standard f32x4.relaxed_madd (0xfd 261) that engines run. The code section
// is decoded instruction by instruction, so only opcodes are touched, never a byte of an
// immediate, a constant or a data segment that happens to look the same. Both opcodes encode in
// two LEB128 bytes: the rewrite keeps every size and offset of the module.
//
//   node scripts/relax-wasm.mjs file.wasm [more.wasm ...]   rewrites in place, prints the counts
//
// Any other pre-standard relaxed-SIMD opcode, an opcode this decoder does not know, or a body
// that does not end where its size says is an error: the file is then deleted (so that the next
// build links it again) and the exit code is 1.
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

import { Reader, sections } from './wasm-reader.mjs';

const PRESTANDARD_FMA_F32X4 = 175;   // 0xfd 0xaf 0x01 (clang 14: f32x4.relaxed_fma)
const RELAXED_MADD_F32X4 = 261;      // 0xfd 0x85 0x02 (the standard f32x4.relaxed_madd)

// Pre-standard relaxed-SIMD opcodes of LLVM 14 (all in gaps of the standard SIMD opcode space):
// only the f32x4 fma has a rewrite here; meeting another one means the compiler used an
// instruction this build did not ask for.
const PRESTANDARD_RELAXED = new Map([
  [162, 'i8x16.relaxed_swizzle'], [165, 'i32x4.relaxed_trunc_f32x4_s'], [166, 'i32x4.relaxed_trunc_f32x4_u'],
  [175, 'f32x4.relaxed_fma'], [176, 'f32x4.relaxed_fms'], [178, 'i8x16.laneselect'], [179, 'i16x8.laneselect'],
  [180, 'f32x4.relaxed_min'], [197, 'i32x4.relaxed_trunc_f64x2_s_zero'], [198, 'i32x4.relaxed_trunc_f64x2_u_zero'],
  [207, 'f64x2.relaxed_fma'], [208, 'f64x2.relaxed_fms'], [210, 'i32x4.laneselect'], [211, 'i64x2.laneselect'],
  [212, 'f64x2.relaxed_min'], [226, 'f32x4.relaxed_max'], [238, 'f64x2.relaxed_max'],
]);

const VALTYPES = new Set([0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f]);

// The code's own reads on the shared reader: a memory access's immediates, a block's type.
class CodeReader extends Reader {
  memarg() { this.u32(); this.u32(); }
  blocktype() {
    const b = this.bytes[this.pos];
    if (b === 0x40 || VALTYPES.has(b)) this.pos++;
    else this.leb(33);  // a type index, as a signed 33-bit number
  }
}

// Writes `value` as LEB128 in exactly `length` bytes (padded with continuation bytes).
function writeLeb(bytes, pos, value, length) {
  for (let i = 0; i < length; i++) {
    const low = value & 0x7f;
    value = Math.floor(value / 128);
    bytes[pos + i] = i === length - 1 ? low : low | 0x80;
  }
  if (value !== 0) throw new Error(`${value} does not fit in ${length} LEB128 bytes`);
}

// 0xfd-prefixed instructions: their immediates.
function simdImmediates(r, op) {
  if (op <= 11 || op === 92 || op === 93) return r.memarg();           // loads, stores, load_zero
  if (op === 12 || op === 13) return r.skip(16);                        // v128.const, i8x16.shuffle
  if (op >= 21 && op <= 34) return r.skip(1);                           // extract/replace_lane
  if (op >= 84 && op <= 91) { r.memarg(); return r.skip(1); }          // load/store lane
  if (op > 275) throw new Error(`unknown SIMD opcode ${op}`);
  return undefined;                                                     // the rest: none
}

function instruction(r, onSimd) {
  const op = r.byte();
  if (op === 0xfd) {
    const at = r.pos;
    const { value, length } = r.leb();
    onSimd(value, at, length);
    return simdImmediates(r, value);
  }
  if (op === 0xfc) {
    const sub = r.u32();
    if (sub <= 7) return undefined;                                     // saturating truncations
    if (sub === 8) { r.u32(); return r.skip(1); }                       // memory.init
    if (sub === 9 || sub === 13) return r.u32();                        // data.drop, elem.drop
    if (sub === 10) return r.skip(2);                                   // memory.copy
    if (sub === 11) return r.skip(1);                                   // memory.fill
    if (sub === 12 || sub === 14) { r.u32(); return r.u32(); }          // table.init, table.copy
    if (sub >= 15 && sub <= 17) return r.u32();                         // table.grow/size/fill
    throw new Error(`unknown 0xfc opcode ${sub}`);
  }
  if (op === 0xfe) {                                                    // atomics
    const sub = r.u32();
    if (sub === 3) return r.skip(1);                                    // atomic.fence
    if (sub > 0x4e) throw new Error(`unknown atomic opcode ${sub}`);
    return r.memarg();
  }
  if (op === 0x02 || op === 0x03 || op === 0x04 || op === 0x06) return r.blocktype();  // block loop if try
  if (op === 0x0c || op === 0x0d || op === 0x09 || op === 0x18) return r.u32();        // br br_if rethrow delegate
  if (op === 0x07 || op === 0x08) return r.u32();                                      // catch throw (tag)
  if (op === 0x0e) {                                                                    // br_table
    const n = r.u32();
    for (let i = 0; i <= n; i++) r.u32();
    return undefined;
  }
  if (op === 0x10 || op === 0x12) return r.u32();                      // call, return_call
  if (op === 0x11 || op === 0x13) { r.u32(); return r.u32(); }        // call_indirect
  if (op === 0x1c) { const n = r.u32(); return r.skip(n); }           // select t*
  if (op >= 0x20 && op <= 0x26) return r.u32();                        // locals, globals, table.get/set
  if (op >= 0x28 && op <= 0x3e) return r.memarg();                     // loads, stores
  if (op === 0x3f || op === 0x40) return r.skip(1);                    // memory.size/grow
  if (op === 0x41) return r.leb(32);
  if (op === 0x42) return r.leb(64);
  if (op === 0x43) return r.skip(4);
  if (op === 0x44) return r.skip(8);
  if (op === 0xd0) return r.skip(1);                                   // ref.null t
  if (op === 0xd2) return r.u32();                                     // ref.func
  if (op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x19 || op === 0x1a || op === 0x1b ||
      (op >= 0x45 && op <= 0xc4) || op === 0xd1) return undefined;     // no immediates
  throw new Error(`unknown opcode 0x${op.toString(16)}`);
}

/**
 * Decodes every function body of the module, instruction by instruction, calling
 * onSimd(op, at, length, f) for each 0xfd-prefixed instruction (its opcode, the position and
 * byte length of its LEB128 opcode, the function's index). Returns how many bodies it decoded.
 */
export function walkCode(bytes, onSimd) {
  let functions = 0;
  for (const { id, start, end } of sections(bytes)) {
    if (id !== 10) continue;
    const code = new CodeReader(bytes, start, end);
    const count = code.u32();
    for (let f = 0; f < count; f++, functions++) {
      const bodySize = code.u32();
      const body = new CodeReader(bytes, code.pos, code.pos + bodySize);
      code.skip(bodySize);
      const groups = body.u32();
      for (let g = 0; g < groups; g++) {
        body.u32();
        const type = body.byte();
        if (!VALTYPES.has(type)) throw new Error(`function ${f}: unknown local type 0x${type.toString(16)}`);
      }
      let last = -1;
      while (body.pos < body.end) {
        last = bytes[body.pos];
        instruction(body, (op, at, length) => onSimd(op, at, length, f));
      }
      if (last !== 0x0b) throw new Error(`function ${f}: its body does not end with 'end'`);
    }
    if (code.pos !== code.end) throw new Error('the code section has bytes after its last function');
  }
  return functions;
}

/**
 * Rewrites the module's pre-standard f32x4 fma opcodes into f32x4.relaxed_madd, in place.
 * Returns { rewritten, relaxedMadd, functions }: how many were rewritten, how many
 * f32x4.relaxed_madd the module holds now, and how many function bodies were decoded.
 */
export function relaxWasm(bytes) {
  let rewritten = 0, relaxedMadd = 0;
  const functions = walkCode(bytes, (op, at, length, f) => {
    if (op === RELAXED_MADD_F32X4) relaxedMadd++;
    if (!PRESTANDARD_RELAXED.has(op)) return;
    if (op !== PRESTANDARD_FMA_F32X4) {
      throw new Error(`function ${f}: pre-standard ${PRESTANDARD_RELAXED.get(op)} (0xfd ${op}) has no rewrite`);
    }
    writeLeb(bytes, at, RELAXED_MADD_F32X4, length);
    rewritten++;
    relaxedMadd++;
  });
  return { rewritten, relaxedMadd, functions };
}

/** The 16 immediate bytes of every v128.const in the module's code, as Float32Arrays of 4 lanes. */
export function vectorConstants(bytes) {
  const out = [];
  walkCode(bytes, (op, at, length) => {
    if (op === 12) out.push(new Float32Array(Uint8Array.from(bytes.subarray(at + length, at + length + 16)).buffer));
  });
  return out;
}

// Whether this engine validates the module (Node 20 runs relaxed SIMD behind a flag, which can
// still be set before the first module is compiled).
export function validates(bytes) {
  setFlagsFromString('--experimental-wasm-relaxed-simd');
  return WebAssembly.validate(bytes);
}

async function main(files) {
  if (files.length === 0) {
    console.error('usage: node scripts/relax-wasm.mjs file.wasm [more.wasm ...]');
    process.exit(2);
  }
  for (const file of files) {
    try {
      const bytes = await readFile(file);
      const { rewritten, functions } = relaxWasm(bytes);
      if (rewritten === 0) throw new Error('no f32x4 fma found (was it built with -mrelaxed-simd?)');
      if (!validates(bytes)) throw new Error('the rewritten module does not validate');
      await writeFile(`${file}.tmp`, bytes);
      await rename(`${file}.tmp`, file);
      console.log(`relax-wasm: ${file}: ${rewritten} f32x4.relaxed_madd in ${functions} functions`);
    } catch (error) {
      await rm(file, { force: true });
      console.error(`relax-wasm: ${file}: ${error.message} (file removed)`);
      process.exit(1);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main(process.argv.slice(2));
