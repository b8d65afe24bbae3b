// onnxruntime-web beside ours in the thread bench (bench/threads.mjs): its one-head MatMul graphs
// (bench/onnx/) at env.wasm.numThreads = T, in a child process per T (its thread count is fixed
// when its wasm starts), kept alive for the whole run and asked for one call at a time, so that
// its calls fall in the same rounds as ours, within the same seconds. The child times each call
// itself: the messages' round trip is not in its figure.
//
// After a run at 2 threads or more, onnxruntime-web keeps about one core busy for some 40 ms (its
// session's intra_op.allow_spinning off as well), and a call of ours made meanwhile read up to
// 1.7x its time on a 2-core host. So `run` returns once the child's threads are quiet, and waits
// for that busy, as a call of ours would keep this thread: after 40 ms of idle, the next call of
// ours read 15-35% slower on that host (the VM's cores had gone idle), after 40 ms busy 5%.
//
//   const peer = await startPeer(T);         // null where onnxruntime-web is not found
//   const ms = await peer.open(c);           // a case { method, L }: warmed up; a call's mean ms
//   const ms = await peer.run({ twice });    // one call timed (after one untimed where twice),
//                                            // returned once its threads have stopped spinning
//   peer.close();                            // its process ends
//   peer.pid                                 // that process's id
//
// Self-contained with bench/lib/thread-cases.mjs: the folder bench/threads-bundle.sh packs
// carries it.
import { fork } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { peerFeeds } from './thread-cases.mjs';

const graph = (method) => fileURLToPath(new URL(`../onnx/${method}-bidirectional.onnx`, import.meta.url));

// The cases it has a graph for: one head, bidirectional, a fresh result (`out` is ours only).
export const peerCase = (c) => c.H === 1 && c.method !== 'decode' && !c.causal && !c.out;

// How many threads of process `pid` are running or waiting for a core (state R in Linux's
// /proc/PID/task/*/stat); null where the system does not say.
function runnableThreads(pid) {
  try {
    let n = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      if (stat[stat.lastIndexOf(')') + 2] === 'R') ++n;
    }
    return n;
  } catch {
    return null;
  }
}

// Busy until no thread of process `pid` runs or waits to, in QUIET_POLLS looks QUIET_POLL_MS
// apart in a row (a thread that spins counts while the system has it off its core, as a share of
// its CPU time would not on a loaded host); at most QUIET_MAX_MS, and that long where the system
// does not say.
const QUIET_POLLS = 5, QUIET_POLL_MS = 2, QUIET_MAX_MS = 100;
function waitQuiet(pid) {
  const start = performance.now();
  let calm = 0, lastAt = -Infinity;
  while (calm < QUIET_POLLS && performance.now() - start < QUIET_MAX_MS) {
    const at = performance.now();
    if (at - lastAt < QUIET_POLL_MS) continue;
    lastAt = at;
    const n = runnableThreads(pid);
    if (n !== null) calm = n === 0 ? calm + 1 : 0;
  }
}

export async function startPeer(T, { warmupMs = 500 } = {}) {
  if (!existsSync(graph('exact'))) return null;
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(T), String(warmupMs)],
    { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (b) => { stderr += b; });
  const pending = [];
  let gone = null;  // why the child can take no more calls
  const fail = (why) => {
    gone ??= new Error(`onnxruntime-web at T = ${T}: ${why}${stderr ? `: ${stderr.slice(0, 300)}` : ''}`);
    for (const p of pending.splice(0)) p.reject(gone);
  };
  child.on('message', (msg) => {
    const p = pending.shift();
    if (msg.error) p?.reject(new Error(`onnxruntime-web at T = ${T}: ${msg.error}`));
    else p?.resolve(msg.ms);
  });
  child.on('exit', (code) => fail(`its process ended (exit ${code})`));
  child.on('error', (e) => fail(e.message));
  const ask = (msg) => new Promise((resolve, reject) => {
    if (gone) return reject(gone);
    pending.push({ resolve, reject });
    child.send(msg, (e) => e && fail(e.message));
  });
  try {
    await ask({ op: 'ready' });
  } catch (e) {
    console.log(e.message);
    child.kill();
    return null;
  }
  return {
    open: (c) => ask({ op: 'open', method: c.method, L: c.L }),
    async run({ twice = false } = {}) {
      const ms = await ask({ op: 'run', twice });
      waitQuiet(child.pid);
      return ms;
    },
    pid: child.pid,
    // Ended rather than asked to exit: Node 20 can hang at exit (scripts/test.sh says when).
    close() {
      child.removeAllListeners('exit');
      child.kill();
    },
  };
}

function serve(T, warmupMs) {
  // Listening from the start: a message that comes before a listener is lost.
  let ort = null;
  const loaded = import('onnxruntime-web').then((module) => {
    ort = module;
    ort.env.wasm.numThreads = T;
    ort.env.logLevel = 'error';
  });
  let session = null, feeds = null;
  const call = () => session.run(feeds);
  const handlers = {
    ready: async () => 0,
    async open({ method, L }) {
      await session?.release();
      feeds = peerFeeds(ort, { method, L });
      session = await ort.InferenceSession.create(graph(method), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
      // The same warm-up as ours (bench/threads.mjs warmUp): at least 3 calls and warmupMs, while
      // the engine compiles onnxruntime's code with its optimizing tier.
      const t0 = performance.now();
      let n = 0;
      for (; n < 3 || performance.now() - t0 < warmupMs; ++n) await call();
      return (performance.now() - t0) / n;
    },
    async run({ twice }) {
      if (twice) await call();
      const t0 = performance.now();
      await call();
      return performance.now() - t0;
    },
  };
  process.on('message', async (msg) => {
    try {
      await loaded;
      process.send({ ms: await handlers[msg.op](msg) });
    } catch (e) {
      process.send({ error: String(e?.message ?? e) });
    }
  });
  process.on('disconnect', () => process.kill(process.pid));
}

if (process.argv[2] === '--serve' && process.send) serve(Number(process.argv[3]), Number(process.argv[4]));
