// The thread bench's peer (bench/lib/ort-peer.mjs): onnxruntime-web in a child process that
// answers one timed call at a time, and returns only once that process has stopped spinning, so
// that the next call of ours is not made while its threads still hold a core.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

import { peerCase, startPeer } from '../../bench/lib/ort-peer.mjs';
import { CASES } from '../../bench/lib/thread-cases.mjs';

// The CPU time of all the threads of process `pid`, ns, where the system says (Linux's
// /proc/PID/task/*/schedstat); null elsewhere.
function cpuNs(pid) {
  try {
    let sum = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) sum += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    return sum;
  } catch {
    return null;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const gone = async (pid) => {
  for (let i = 0; i < 100; ++i) {
    try { process.kill(pid, 0); } catch { return true; }
    await sleep(20);
  }
  return false;
};

test('the peer takes the one-head bidirectional calls without out, and no others', () => {
  assert.deepEqual(Object.keys(CASES).filter((id) => peerCase(CASES[id])),
    ['favor1', 'favorSmall', 'favorMid', 'exactMid', 'favor1long', 'exact1']);
});

test('a peer times its calls, and its process ends when closed', async () => {
  const peer = await startPeer(1, { warmupMs: 50 });
  assert.ok(peer, 'onnxruntime-web is a dev dependency: the peer starts');
  for (const id of ['exactMid', 'favorSmall']) {
    const warm = await peer.open(CASES[id]);
    assert.ok(warm > 0 && warm < 1000, `${id}: warm-up mean ${warm} ms`);
    for (const twice of [false, true]) {
      const ms = await peer.run({ twice });
      assert.ok(ms > 0 && ms < 1000, `${id}: a call of ${ms} ms`);
    }
  }
  peer.close();
  assert.ok(await gone(peer.pid), 'the peer process ended');
});

test('a call on a peer whose process has ended is refused with the reason', async () => {
  const peer = await startPeer(1, { warmupMs: 0 });
  await peer.open(CASES.favorSmall);
  process.kill(peer.pid, 'SIGKILL');
  await assert.rejects(peer.run(), /onnxruntime-web at T = 1: its process ended/);
  await assert.rejects(peer.run(), /onnxruntime-web at T = 1: its process ended/);
  peer.close();
});

// After a run at 2 threads, onnxruntime-web keeps about one core busy for some 40 ms; run()
// returns after that. Measured over 50 ms after each of 5 runs: a process still spinning would
// use about 50 ms of CPU in that time (one core), a quiet one a few hundred µs.
test('a peer with threads returns once its process is quiet', { skip: cpuNs(process.pid) === null && 'no /proc here' }, async () => {
  const peer = await startPeer(2, { warmupMs: 100 });
  await peer.open(CASES.exactMid);
  const after = [];
  for (let i = 0; i < 5; ++i) {
    await peer.run();
    const before = cpuNs(peer.pid);
    for (const t0 = performance.now(); performance.now() - t0 < 50;);
    after.push((cpuNs(peer.pid) - before) / 1e6);
  }
  after.sort((a, b) => a - b);
  assert.ok(after[2] < 10, `the peer's CPU in the 50 ms after a call, ms: ${after.map((x) => x.toFixed(1)).join(', ')}`);
  peer.close();
});

test('the peer needs its graphs', () => {
  assert.ok(existsSync(new URL('../../bench/onnx/exact-bidirectional.onnx', import.meta.url)));
  assert.ok(existsSync(new URL('../../bench/onnx/favor-bidirectional.onnx', import.meta.url)));
});
