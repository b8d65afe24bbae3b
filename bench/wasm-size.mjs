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

import { Reader, sections } from '../scripts/wasm-reader.mjs';

// Skips an import's description (what follows its kind byte); whether it imports a function.
function skipImport(r, kind) {
  if (kind === 0) r.u32();                                      // function: type index
  else if (kind === 1 || kind === 2) {                          // table (element type, limits), memory (limits)
    if (kind === 1) r.byte();
    const flags = r.byte();
    r.u32();
    if (flags & 1) r.u32();
  } else if (kind === 3) r.skip(2);                             // global: value type, mutability
  else if (kind === 4) { r.byte(); r.u32(); }                   // tag: attribute, type index
  else throw new RangeError(`import kind ${kind} unknown`);
  return kind === 0;
}

/** Every function defined in the module: { index, name (null without a name section), bytes }. */
export function functionSizes(bytes) {
  let imported = 0;
  const bodies = [];
  const names = new Map();
  for (const { id, start, end } of sections(bytes)) {
    const r = new Reader(bytes, start, end);
    if (id === 2) {
      for (let count = r.u32(); count > 0; --count) {
        r.name();
        r.name();
        if (skipImport(r, r.byte())) imported++;
      }
    } else if (id === 10) {
      for (let count = r.u32(); count > 0; --count) {
        const length = r.u32();
        bodies.push(length);
        r.skip(length);
      }
    } else if (id === 0 && r.name() === 'name') {
      while (r.pos < end) {
        const kind = r.byte(), length = r.u32(), next = r.pos + length;
        if (kind === 1) for (let count = r.u32(); count > 0; --count) names.set(r.u32(), r.name());
        r.pos = next;
      }
    }
  }
  return bodies.map((length, i) => ({ index: imported + i, name: names.get(imported + i) ?? null, bytes: length }));
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
