// The page's side of its compute worker (demo/src/compute-client.js), against a stand-in Worker
// that records what it is sent: one computation in flight, the latest waiting request replacing
// older ones, each message handed to its handler, and a worker silent while it loads replaced
// (with the computation it had) until the page gives up.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { ComputeClient } from '../../demo/src/compute-client.js';

const workers = [];
class FakeWorker {
  constructor(url, options) {
    assert.match(String(url), /compute-worker\.js$/);
    assert.deepEqual(options, { type: 'module' });
    Object.assign(this, { sent: [], terminated: false, onmessage: null, onerror: null });
    workers.push(this);
  }
  postMessage(message) { this.sent.push(message); }
  terminate() { this.terminated = true; }
  answer(data) { this.onmessage({ data }); }
}
globalThis.Worker = FakeWorker;
afterEach(() => { workers.length = 0; });

// A client whose handlers log their calls as [name, ...arguments].
function client(options) {
  const log = [];
  const names = ['ready', 'fatal', 'progress', 'manifest', 'long', 'generated', 'settled', 'busy', 'restarted', 'gaveUp'];
  const handlers = Object.fromEntries(names.map((n) => [n, (...args) => log.push([n, ...args])]));
  return { c: new ComputeClient(handlers, options), log };
}

test('one computation at a time; while it runs, the newest request waits and keeps the oldest t0', () => {
  const { c, log } = client();
  const [w] = workers;
  assert.ok(c.idle);
  c.request({ m: 8 }, 100);
  assert.deepEqual(w.sent, [{ id: 1, params: { m: 8 } }]);
  assert.deepEqual(log, [['busy', true]]);
  assert.equal(c.idle, false);
  c.request({ m: 16 }, 110);
  c.request({ m: 32 }, 120);
  assert.equal(w.sent.length, 1, 'nothing more sent while one is in flight');

  w.answer({ type: 'result', id: 1, A: 'first' });
  const [name, msg, req] = log.at(-1);
  assert.equal(name, 'settled');
  assert.equal(msg.A, 'first');
  assert.equal(req.t0, 100);
  assert.equal(typeof req.sent, 'number');
  assert.deepEqual(w.sent.at(-1), { id: 3, params: { m: 32 } }, 'the latest request, not the one it replaced');
  assert.equal(c.idle, false);

  w.answer({ type: 'error', id: 3, message: 'no' });
  assert.equal(log.at(-2)[0], 'settled');
  assert.equal(log.at(-2)[2].t0, 110, 'latency counts from the oldest change not yet served');
  assert.deepEqual(log.at(-1), ['busy', false]);
  assert.ok(c.idle);
  c.load.loaded();
});

test('the worker\'s other messages go to their handlers and leave the computation in flight', () => {
  const { c, log } = client();
  const [w] = workers;
  c.request({ m: 8 }, 0);
  const messages = {
    ready: { type: 'ready', info: {} }, progress: { type: 'progress', fraction: 0.5 }, manifest: { type: 'manifest', models: [] },
    long: [{ type: 'long-start' }, { type: 'long-block' }, { type: 'long-done' }], generated: { type: 'generated', id: 9 },
  };
  for (const [handler, list] of Object.entries(messages)) {
    for (const m of [list].flat()) {
      w.answer(m);
      assert.deepEqual(log.at(-1), [handler, m]);
    }
  }
  const before = log.length;
  w.answer({ type: 'alive' });
  assert.equal(log.length, before, 'a heartbeat is only heard');
  assert.equal(c.idle, false);
  c.post({ kind: 'generate', id: c.nextId() });
  assert.deepEqual(w.sent.at(-1), { kind: 'generate', id: 2 });
  w.answer({ type: 'fatal', message: 'loading failed' });
  assert.deepEqual(log.at(-1), ['fatal', { type: 'fatal', message: 'loading failed' }]);
  w.onerror({ message: 'boom' });
  assert.deepEqual(log.at(-1), ['fatal', { message: 'the compute worker failed: boom' }]);
});

test('a worker heard and then silent while it loads is replaced, its computation sent again; the third gives up', async () => {
  const { c, log } = client({ silentMs: 40 });
  c.request({ m: 8 }, 0);
  for (let n = 1; n <= 3; n++) {
    const w = workers[n - 1];
    w.answer({ type: 'alive' });
    await new Promise((resolve) => setTimeout(resolve, 120));
    assert.ok(w.terminated, `worker ${n} ended`);
    if (n < 3) {
      assert.deepEqual(log.at(-1), ['restarted', n]);
      assert.equal(workers.length, n + 1);
      assert.deepEqual(workers[n].sent, [{ id: 1, params: { m: 8 } }], 'the computation in flight, sent again');
    }
  }
  assert.deepEqual(log.at(-1), ['gaveUp']);
  assert.equal(workers.length, 3, 'no fourth worker');
  assert.equal(c.worker, workers[2]);
});

test('a worker that answers "ready" is not watched any more', async () => {
  const { c, log } = client({ silentMs: 40 });
  workers[0].answer({ type: 'alive' });
  workers[0].answer({ type: 'ready', info: {} });
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(workers.length, 1);
  assert.equal(workers[0].terminated, false);
  assert.deepEqual(log.map(([n]) => n), ['ready']);
  assert.ok(c.idle);
});
