// One side of the thread bench in a browser (bench/threads-browser.mjs): a dedicated module
// Worker that holds either our module at T threads (web/browser.js, loadFavor({ threads: T })) or
// onnxruntime-web at env.wasm.numThreads = T (each worker its own instance of it, so every T keeps
// its own thread count), and makes the thread bench's calls (bench/lib/thread-cases.mjs) one at a
// time when asked, timing each itself: the messages' round trip is not in its figure. A worker,
// as a page puts long calls there: a call's caller may then block on atomics, as the pool's does.
//
//   { op: 'load', side: 'ours' | 'ort', T }       -> { info } (ours) or {}
//   { op: 'open', id }                            -> { ms: a warmed-up call's mean, used }
//   { op: 'run', twice }                          -> { ms } (one call timed, after one untimed where twice)
//   { op: 'decode', id } then { op: 'burst' }     -> { rate: tokens/s of 400 appends }
import { CASES, D, FEATURES, caseCall, peerFeeds, qkv, stateOptions, tensor } from './thread-cases.mjs';
import { WARMUP_MS, warmUpSteps } from './thread-rounds.mjs';

// At least 3 calls and WARMUP_MS, as bench/threads.mjs warmUp: the engine compiles the code each
// thread runs with its optimizing tier only after it has run a while. Returns a call's mean ms.
async function warmUp(call) {
  const t0 = performance.now();
  let n = 0;
  for (; n < 3 || performance.now() - t0 < WARMUP_MS; ++n) await call();
  return (performance.now() - t0) / n;
}

// After a run at 2 threads or more onnxruntime-web keeps a core busy for some 40 ms (see
// bench/lib/ort-peer.mjs); the browser does not say when its threads are quiet, so its worker
// answers only after that long, busy meanwhile, as a call of ours would keep this thread.
const ORT_SETTLE_MS = 40;

let side, T, favor, featureMap, ort, session, call, state, step;

const handlers = {
  async load(msg) {
    ({ side, T } = msg);
    if (side === 'ours') {
      const { loadFavor } = await import('/web/browser.js');
      favor = await loadFavor({ threads: T });
      featureMap = favor.createFeatureMap({ dim: D, features: FEATURES, seed: 7 });
      return { info: favor.info };
    }
    ort = await import('/__ort/ort.wasm.min.mjs');
    Object.assign(ort.env.wasm, { numThreads: T, wasmPaths: '/__ort/' });
    ort.env.logLevel = 'error';
    return {};
  },
  async open({ id }) {
    const c = CASES[id];
    if (side === 'ours') {
      const H = c.H === 'T' ? T : c.H;
      call = caseCall(favor, featureMap, c, qkv(H, c.L), H);
      favor.threadsUsed();
      const ms = await warmUp(call);
      return { ms, used: favor.threadsUsed() };
    }
    // onnxruntime-web's one-head graphs (bench/onnx).
    const feeds = peerFeeds(ort, c);
    const graph = await (await fetch(`/bench/onnx/${c.method}-bidirectional.onnx`)).arrayBuffer();
    await session?.release();  // a large case's session holds its buffers until released
    session = await ort.InferenceSession.create(graph, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    call = () => session.run(feeds);
    return { ms: await warmUp(call) };
  },
  async run({ twice }) {
    if (twice) await call();
    const t0 = performance.now();
    await call();
    const ms = performance.now() - t0;
    if (side === 'ort' && T > 1) for (const t = performance.now(); performance.now() - t < ORT_SETTLE_MS;);
    return { ms };
  },
  // Decode, as bench/threads.mjs measureDecoders: a prefill of L positions, each module's steps
  // warmed up for WARMUP_MS on a state of its own, then 200 appends; bursts of 400.
  async decode({ id }) {
    const c = CASES[id];
    const options = stateOptions(c, featureMap);
    const x = tensor([c.H, 1, D], 4);
    step = () => state.append(x, x, x);
    warmUpSteps(favor, options, x, WARMUP_MS);
    state?.dispose();
    state = favor.createCausalState(options);
    state.append(...qkv(c.H, c.L));
    favor.threadsUsed();
    for (let n = 0; n < 200; ++n) step();
    return { used: favor.threadsUsed() };
  },
  async burst() {
    const steps = 400, t0 = performance.now();
    for (let n = 0; n < steps; ++n) step();
    return { rate: steps / ((performance.now() - t0) / 1000) };
  },
};

onmessage = async ({ data }) => {
  try {
    postMessage(await handlers[data.op](data));
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};
