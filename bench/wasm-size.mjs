#!/usr/bin/env node
// Where a wasm module's code goes: each function's body in bytes, largest first, named from the
// module's name section (demangled with c++filt where it is installed). The modules in dist/ carry
// no names; --build links the SIMD build with --profiling-funcs into build/wasm-size/ first (the
// same code, with a name section).
//
//   node bench/wasm-size.mjs [--build] [--top 40] [FILE.wasm]   (default: build/wasm-size/favor-simd.wasm)
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

// An unsigned LEB128 at bytes[at]: [value, the offset after it].
function leb(bytes, at) {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

function name(bytes, at) {
  const [length, start] = leb(bytes, at);
  return [new TextDecoder().decode(bytes.subarray(start, start + length)), start + length];
}

// Skips an import's description (what follows its kind byte).
function skipImport(bytes, kind, at) {
  if (kind === 0) return leb(bytes, at)[1];                       // function: type index
  if (kind === 1) at += 1;                                          // table: element type, then limits
  if (kind === 1 || kind === 2) {                                   // memory: limits
    const flags = bytes[at++];
    at = leb(bytes, at)[1];
    return flags & 1 ? leb(bytes, at)[1] : at;
  }
  if (kind === 3) return at + 2;                                    // global: value type, mutability
  if (kind === 4) return leb(bytes, at + 1)[1];                     // tag: attribute, type index
  throw new RangeError(`import kind ${kind} unknown`);
}

/** Every function defined in the module: { index, name (null without a name section), bytes }. */
export function functionSizes(bytes) {
  if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) throw new TypeError('not a wasm module');
  let imported = 0;
  let bodies = [];
  const names = new Map();
  for (let at = 8; at < bytes.length;) {
    const id = bytes[at];
    const [size, start] = leb(bytes, at + 1);
    const end = start + size;
    if (id === 2) {
      let [count, p] = leb(bytes, start);
      for (; count > 0; --count) {
        p = name(bytes, p)[1];
        p = name(bytes, p)[1];
        const kind = bytes[p];
        if (kind === 0) imported++;
        p = skipImport(bytes, kind, p + 1);
      }
    } else if (id === 10) {
      let [count, p] = leb(bytes, start);
      for (; count > 0; --count) {
        const [length, body] = leb(bytes, p);
        bodies.push(length);
        p = body + length;
      }
    } else if (id === 0) {
      let [section, p] = name(bytes, start);
      while (section === 'name' && p < end) {
        const kind = bytes[p];
        const [length, sub] = leb(bytes, p + 1);
        if (kind === 1) {
          let [count, q] = leb(bytes, sub);
          for (; count > 0; --count) {
            let index;
            [index, q] = leb(bytes, q);
            let text;
            [text, q] = name(bytes, q);
            names.set(index, text);
          }
        }
        p = sub + length;
      }
    }
    at = end;
  }
  bodies = bodies.map((length, i) => ({ index: imported + i, name: names.get(imported + i) ?? null, bytes: length }));
  return bodies;
}

function demangle(list) {
  const out = spawnSync('c++filt', { input: list.join('\n'), encoding: 'utf8' });
  return out.status === 0 ? out.stdout.split('\n') : list;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const repo = fileURLToPath(new URL('..', import.meta.url));
  const { values: args, positionals } = parseArgs({
    options: { build: { type: 'boolean', default: false }, top: { type: 'string', default: '40' } },
    allowPositionals: true,
  });
  const dir = `${repo}build/wasm-size`;
  if (args.build) {
    const env = { ...process.env, NODE_PATH: ['/usr/share/nodejs', process.env.NODE_PATH].filter(Boolean).join(':') };
    execFileSync('emcmake', ['cmake', '-S', repo, '-B', dir, '-DCMAKE_BUILD_TYPE=Release', '-DFAVOR_WASM_SIMD=ON',
      '-DFAVOR_WASM_THREADS=OFF', '-DFAVOR_WASM_RELAXED=OFF', '-DEigen3_DIR=/usr/share/eigen3/cmake',
      '-DCMAKE_EXE_LINKER_FLAGS=--profiling-funcs'], { stdio: ['ignore', 'ignore', 'inherit'], env });
    execFileSync('cmake', ['--build', dir, '--target', 'favor_wasm', '-j'], { stdio: 'inherit', env });
  }
  const file = positionals[0] ?? `${dir}/favor-simd.wasm`;
  const functions = functionSizes(readFileSync(file)).sort((a, b) => b.bytes - a.bytes);
  const total = functions.reduce((s, f) => s + f.bytes, 0);
  const top = functions.slice(0, Number(args.top));
  const shown = demangle(top.map((f) => f.name ?? `function ${f.index}`));
  console.log(`${file}: ${functions.length} functions, ${total} bytes of code${functions.some((f) => f.name) ? '' : ' (no name section: --build links one)'}`);
  top.forEach((f, i) => console.log(`${String(f.bytes).padStart(8)} ${(100 * f.bytes / total).toFixed(1).padStart(5)}%  ${shown[i].slice(0, 160)}`));
}
