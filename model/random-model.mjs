#!/usr/bin/env node
// Development only: writes a model with RANDOM weights in the format of train/models (manifest.json
// plus float16 <name>.bin: the layout of train/model.py) into a folder of your choice, to exercise
// model/runner.js and the page before trained models exist. Its numbers mean nothing; never put it
// in train/models as if trained.
//   node model/random-model.mjs --out build/random-models [--seed 1]
import { mkdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({ options: { out: { type: 'string' }, seed: { type: 'string', default: '1' } } });
if (!args.out) throw new Error('random-model: --out DIR is required (never train/models)');
const vocab = '\n !"$&\'()*,-.0123456789:;?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz—';
const C = 128, layers = 4, heads = 4, context = 256, mlp = 512, V = [...vocab].length, hd = C / heads;

let s = Number(args.seed) >>> 0;
const uniform = () => { s = (s + 0x6d2b79f5) >>> 0; let t = Math.imul(s ^ (s >>> 15), s | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
const normal = () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());

// float32 -> float16 bits (round to nearest even; the weights here are small and finite)
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
function half(x) {
  f32[0] = x;
  const b = u32[0], sign = (b >>> 16) & 0x8000, e = ((b >>> 23) & 0xff) - 127 + 15, m = b & 0x7fffff;
  if (e <= 0) return sign | Math.round((m | 0x800000) / 2 ** (14 - e));
  if (e >= 31) return sign | 0x7c00;
  let h = sign | (e << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return h;
}

const shapes = [['tok', [V, C]], ['pos', [context, C]]];
for (let l = 0; l < layers; l++) {
  shapes.push(...[['ln1.weight', [C]], ['ln1.bias', [C]], ['qkv.weight', [3 * C, C]], ['qkv.bias', [3 * C]], ['proj.weight', [C, C]],
    ['proj.bias', [C]], ['ln2.weight', [C]], ['ln2.bias', [C]], ['fc1.weight', [mlp, C]], ['fc1.bias', [mlp]], ['fc2.weight', [C, mlp]],
    ['fc2.bias', [C]]].map(([n, d]) => [`blocks.${l}.${n}`, d]));
}
shapes.push(['ln_f.weight', [C]], ['ln_f.bias', [C]], ['head.weight', [V, C]], ['head.bias', [V]]);

mkdirSync(args.out, { recursive: true });
const models = [];
for (const [name, attention] of [['softmax', 'softmax'], ['performer', 'favor']]) {
  const tensors = [], parts = [];
  let offset = 0;
  for (const [tname, dims] of shapes) {
    const n = dims.reduce((a, b) => a * b, 1), h = new Uint16Array(n);
    const ln = /ln.*weight/.test(tname), bias = /bias/.test(tname);
    for (let i = 0; i < n; i++) h[i] = half(ln ? 1 + 0.1 * normal() : bias ? 0.02 * normal() : (tname === 'qkv.weight' ? 0.3 : 0.1) * normal());
    tensors.push({ name: tname, dims, offset, dtype: 'float16' });
    parts.push(Buffer.from(h.buffer));
    offset += 2 * n;
  }
  const blob = Buffer.concat(parts);
  writeFileSync(join(args.out, `${name}.bin`), blob);
  models.push({
    name, title: `RANDOM weights (${name}, development only)`, attention, file: `${name}.bin`, bytes: blob.length,
    sha256: createHash('sha256').update(blob).digest('hex'),
    architecture: { vocab: V, width: C, layers, heads, context, mlp, headDim: hd, norm: 'pre-LayerNorm', layerNormEps: 1e-5, gelu: 'tanh',
      head: 'untied Linear with bias', scale: 1 / Math.sqrt(hd) },
    vocab, tensors, training: { steps: 0, random: true }, heldOutBpc: null, heldOutWindows: 0,
    evalSubset: { windows: 32, window: context + 1, stride: context, start: 0 }, evalSubsetBpc: null,
    ...(attention === 'favor' && { projections: Array.from({ length: layers }, (_, layer) => ({ layer, dims: [64, hd], dtype: 'float32',
      data: Array.from({ length: 64 * hd }, normal) })) }),
  });
}
writeFileSync(join(args.out, 'manifest.json'), JSON.stringify({ corpus: { note: 'random weights, no corpus' }, models }));
console.log(`random-model: wrote ${models.map((m) => m.file).join(', ')} and manifest.json to ${args.out}`);
