#!/usr/bin/env node
// Scale test: FAVOR+ (positive, m = 256) bidirectional and causal at L = 1,048,576, d = 64 in
// Node through the public API (loadFavor), in a fresh process. Prints one JSON line: the build
// and thread count used, per run the time, whether the output is finite, and the wasm heap after
// the call; peakHeapBytes is the heap at the end (wasm memory never shrinks).
// --threads defaults to 1, the figure comparable across runs (threads: 'auto' is the package's
// default; >1 loads the pthreads build).
//   node bench/scale.mjs [--L 1048576] [--threads 1|2|auto]
import { parseArgs } from 'node:util';

import { loadFavor } from '../web/node.js';
import { runScale } from './lib/scale-run.mjs';

const { values: args } = parseArgs({ options: { L: { type: 'string', default: '1048576' }, threads: { type: 'string', default: '1' } } });
const threads = args.threads === 'auto' ? 'auto' : Number(args.threads);
const MiB = 2 ** 20;

const favor = await loadFavor({ threads });
const build = `favor-${favor.info.relaxedSimd ? 'relaxed' : favor.info.simd ? 'simd' : 'scalar'}${favor.info.threads > 1 ? '-threads' : ''}`;
const result = runScale(favor, { L: Number(args.L), extra: () => ({ rssAfterMiB: Math.round(process.memoryUsage().rss / MiB) }) });
favor.dispose();
console.log(JSON.stringify({ environment: 'node', build, ...result }));
