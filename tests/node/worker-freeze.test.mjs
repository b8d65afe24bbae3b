// loadFavor({ worker: true }) when its worker freezes while loading (Firefox can block a worker for
// good in the `new Worker()` that starts a pthread: web/load-watch.js). The page's side must
// end a worker that was heard once and then went silent, start another, and give up after three
// with a clear error; a worker not heard yet (its script still downloading) is not a freeze.
// Fake workers stand in for real ones: a real freeze cannot be caused on purpose.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createWorkerApi } from '../../web/worker-client.js';
import { serve } from '../../web/worker-host.js';

const SILENT_MS = 400;
const INFO = { simd: true, threads: 2 };

// Node's keepAlive as the real workers do it (a pending call keeps the process running), with a
// timer in place of a worker thread; terminate() ends it, as it ends a thread.
function keepAliveTimer() {
  let timer;
  const keepAlive = (busy) => {
    clearInterval(timer);
    if (busy) timer = setInterval(() => {}, 1000);
  };
  return { keepAlive, terminate: () => keepAlive(false) };
}

// A fake worker: `behave(msg, reply)` answers what it is sent, as a worker does, in a later task.
// Records its lifetime in `log`.
function fakeStarter(behaviours, log) {
  let n = 0;
  return () => {
    const index = n++;
    const behave = behaviours[Math.min(index, behaviours.length - 1)];
    let onMessage = () => {};
    const entry = { index, terminated: false, received: [] };
    const alive = keepAliveTimer();
    log.push(entry);
    return {
      worker: { postMessage: (msg) => { entry.received.push(msg.op); behave(msg, (reply) => setTimeout(() => { if (!entry.terminated) onMessage(reply); })); } },
      listen: (message) => { onMessage = message; },
      terminate: () => { entry.terminated = true; alive.terminate(); },
      keepAlive: alive.keepAlive,
    };
  };
}

const frozen = (msg, reply) => { if (msg.op === 'load') reply({ alive: true }); };  // one beat, then nothing
const healthy = (msg, reply) => {
  if (msg.op === 'load') setTimeout(() => reply({ id: msg.id, value: { info: INFO } }), 20);
  else reply({ id: msg.id, value: `ran ${msg.op}` });
};

test('a worker silent after its first heartbeat is ended and replaced; the third one serves the API', { timeout: 30_000 }, async () => {
  const log = [];
  const t0 = Date.now();
  const api = await createWorkerApi(fakeStarter([frozen, frozen, healthy], log), { loadOptions: { threads: 2 }, silentMs: SILENT_MS });
  assert.deepEqual(api.info, INFO);
  assert.equal(log.length, 3, 'workers started');
  assert.deepEqual(log.map((w) => w.terminated), [true, true, false], 'the frozen ones are ended, the serving one is not');
  assert.ok(Date.now() - t0 >= 2 * SILENT_MS, 'each frozen worker was given its silence before being replaced');
  assert.equal(await api.compare(), 'ran compare', 'calls go to the third worker');
  assert.deepEqual(log[2].received, ['load', 'compare']);
  await api.dispose();
  assert.equal(log[2].terminated, true);
});

test('three frozen workers in a row reject with FAVOR_WORKER_FROZEN, saying what to do; none is left running', { timeout: 30_000 }, async () => {
  const log = [];
  await assert.rejects(createWorkerApi(fakeStarter([frozen], log), { loadOptions: {}, silentMs: SILENT_MS }), (error) => {
    assert.equal(error.code, 'FAVOR_WORKER_FROZEN');
    assert.match(error.message, /stopped answering while it loaded \(3 workers in a row, each silent for 0\.4 s\).*threads: 1/);
    return true;
  });
  assert.deepEqual(log.map((w) => w.terminated), [true, true, true]);
});

test('a worker not heard from yet is waited for (its script may be downloading), and a load error is not retried', { timeout: 30_000 }, async () => {
  const log = [];
  const slowStart = (msg, reply) => { if (msg.op === 'load') setTimeout(() => healthy(msg, reply), 4 * SILENT_MS); };
  const api = await createWorkerApi(fakeStarter([slowStart], log), { loadOptions: {}, silentMs: SILENT_MS });
  assert.deepEqual(api.info, INFO);
  assert.equal(log.length, 1, 'one worker: silence before any message is not a freeze');
  await api.dispose();

  const failing = (msg, reply) => {
    reply({ alive: true });
    reply({ id: msg.id, error: { name: 'TypeError', message: 'threads: expected 1-64' } });
  };
  const failLog = [];
  await assert.rejects(createWorkerApi(fakeStarter([failing], failLog), { loadOptions: {}, silentMs: SILENT_MS }),
    { name: 'TypeError', message: 'threads: expected 1-64' });
  assert.equal(failLog.length, 1, 'an error from the load is the answer: no new worker');
  assert.equal(failLog[0].terminated, true);
});

test('a heartbeat keeps a long load alive: beats at once, every second while loading, and none after', { timeout: 30_000 }, async () => {
  const sent = [];
  const port = { postMessage: (msg) => sent.push({ msg, at: Date.now() }) };
  let finish;
  const onMessage = serve(port, () => new Promise((resolve) => { finish = resolve; }));
  const t0 = Date.now();
  const loading = onMessage({ id: 1, op: 'load', args: [] });
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const beats = sent.filter((s) => s.msg.alive === true);
  assert.ok(beats.length >= 3 && beats.length <= 4, `beats in 2.5 s: ${beats.length}`);
  assert.ok(beats[0].at - t0 < 50, 'the first beat is sent when the load starts');
  finish({ info: INFO });
  await loading;
  const count = sent.length;
  assert.deepEqual(sent.at(-1).msg, { id: 1, value: { info: INFO } });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(sent.length, count, 'no beat after the load has settled');

  // The real client and host together: a load slower than the silence is not taken for a freeze.
  const log = [];
  const hosted = () => {
    let deliver = () => {};
    const host = serve({ postMessage: (msg) => setTimeout(() => deliver(msg)) },
      () => new Promise((resolve) => setTimeout(() => resolve({ info: INFO }), 4000)));
    log.push(1);
    const alive = keepAliveTimer();
    return { worker: { postMessage: (msg) => host(msg) }, listen: (message) => { deliver = message; }, ...alive };
  };
  const api = await createWorkerApi(hosted, { loadOptions: {}, silentMs: 2500 });
  assert.deepEqual(api.info, INFO);
  assert.equal(log.length, 1);
  await api.dispose();
});

// The demo's workers call loadFavor() themselves; the page watches them the same way.
test('the demo\'s load watch: replaces a worker silent after a beat, gives up after three, ignores silence before the first beat', { timeout: 30_000 }, async () => {
  const { heartbeat, loadWatch } = await import('../../demo/src/load-watch.js');
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const events = [];
  const watchFor = (silentMs) => loadWatch({ replace: (n) => events.push(`replace ${n}`), giveUp: () => events.push('give up'), silentMs });
  let watch = watchFor(300);
  await sleep(900);
  assert.deepEqual(events, [], 'not heard yet: waited for');
  watch.heard();
  await sleep(900);
  assert.deepEqual(events, ['replace 1']);
  await sleep(900);
  assert.deepEqual(events, ['replace 1'], 'the replacement not heard yet: waited for');
  watch.heard();
  await sleep(900);
  watch.heard();
  await sleep(900);
  assert.deepEqual(events, ['replace 1', 'replace 2', 'give up']);
  watch.heard();
  await sleep(900);
  assert.equal(events.length, 3, 'nothing after giving up');

  events.length = 0;
  watch = watchFor(1000);
  for (let i = 0; i < 10; i++) { watch.heard(); await sleep(100); }
  watch.loaded();
  watch.heard();
  await sleep(1500);
  assert.deepEqual(events, [], 'beating, then loaded: never replaced');

  const posted = [];
  globalThis.postMessage = (msg) => posted.push(msg);
  try {
    let settle;
    heartbeat(new Promise((resolve, reject) => { settle = reject; }));
    await sleep(2500);
    assert.ok(posted.length >= 2 && posted.length <= 3, `a beat at once and one a second: ${posted.length} in 2.5 s`);
    assert.deepEqual(posted[0], { type: 'alive' });
    const count = posted.length;
    settle(new Error('a failed load ends the beats too'));
    await sleep(1500);
    assert.equal(posted.length, count);
  } finally {
    delete globalThis.postMessage;
  }
});
