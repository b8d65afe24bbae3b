// The worker's side of loadFavor({ worker: true }) (web/worker-host.js) driven message by message
// through a stand-in port, as a page's client or a hostile one could send them: only the table's
// calls, getters and methods are served (never another property of the API or of an object), a
// disposed object is gone, a method returning its object replies nothing, results are moved back,
// and a result that cannot be posted still gets a reply.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadFavor } from '../../web/node.js';
import { serve } from '../../web/worker-host.js';

// A served instance: send(msg) resolves to its one reply ({ msg, transfer }).
async function served({ failPosts = 0 } = {}) {
  const replies = [];
  let failing = failPosts;
  const port = {
    postMessage(msg, transfer) {
      if (msg.alive) return;  // the heartbeat while loading
      if (failing > 0 && 'value' in msg) {
        failing--;
        throw new DOMException('could not be cloned', 'DataCloneError');
      }
      replies.push({ msg, transfer });
    },
  };
  const handle = serve(port, loadFavor);
  let id = 0;
  const send = async (message) => {
    const before = replies.length;
    await handle({ id: ++id, ...message });
    assert.equal(replies.length, before + 1, `one reply to ${JSON.stringify(message)}`);
    const reply = replies.at(-1);
    assert.equal(reply.msg.id, id);
    return reply;
  };
  const loaded = await send({ op: 'load', args: [{ threads: 1 }] });
  assert.equal(loaded.msg.value.info.threads, 1);
  return { send, replies, setFailing: (n) => { failing = n; } };
}

const errorOf = (reply) => reply.msg.error;
const tensor = (dims, seed) => ({ data: Float32Array.from({ length: dims[0] * dims[1] }, (_, i) => Math.sin(seed + i)), dims });

test('only the operations table is served: other properties of the API, inherited ones included, are refused', async () => {
  const { send } = await served();
  for (const op of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf', 'info', 'dispose', 'loadFavor', 'nosuch']) {
    const e = errorOf(await send({ op, args: [] }));
    assert.deepEqual([e?.name, e?.message], ['TypeError', `${op}: not a favor-attention call`], op);
  }
  const ok = await send({ op: 'exactAttention', args: [tensor([3, 4], 1), tensor([3, 4], 2), tensor([3, 4], 3)] });
  assert.deepEqual(ok.msg.value.dims, [3, 4]);
  // The output is moved back, not copied.
  assert.deepEqual(ok.transfer, [ok.msg.value.data.buffer]);
});

test("an object's table getters and methods are served, nothing else of it; a disposed object is gone", async () => {
  const { send } = await served();
  const made = (await send({ op: 'createFeatureMap', args: [{ dim: 4, features: 3, seed: 2 }] })).msg.value;
  assert.equal(made.props.dim, 4);
  assert.ok(Number.isInteger(made.id) && made.id > 0);
  const projection = (await send({ op: 'projection', target: made.id, args: [] })).msg.value;
  assert.deepEqual(projection.dims, [3, 4]);
  // A method returning its own object replies nothing (the client returns its proxy).
  const redrawn = await send({ op: 'redraw', target: made.id, args: [7] });
  assert.ok(!errorOf(redrawn));
  assert.equal(redrawn.msg.value, undefined);
  // Settings (copied to the proxy when it was made), methods and properties outside the table, and
  // the methods of another kind of object, are refused.
  for (const op of ['dim', 'numFeatures', 'handle', 'constructor', 'toString', '__proto__', 'append', 'reset', 'length']) {
    const e = errorOf(await send({ op, target: made.id, args: [] }));
    assert.deepEqual([e?.name, e?.message], ['TypeError', `${op}: not a method of this object`], op);
  }
  assert.ok(!errorOf(await send({ op: 'dispose', target: made.id, args: [] })));
  for (const op of ['projection', 'redraw']) {
    const e = errorOf(await send({ op, target: made.id, args: [1] }));
    assert.deepEqual([e?.name, e?.message], ['TypeError', `${op}: no such object in the worker`], `${op} after dispose`);
  }
  // Disposing again, or an id never made, is harmless.
  assert.ok(!errorOf(await send({ op: 'dispose', target: made.id, args: [] })));
  assert.ok(!errorOf(await send({ op: 'dispose', target: 999, args: [] })));
});

test('a result that cannot be posted gets an error reply, and the instance goes on', async () => {
  const { send, setFailing } = await served();
  setFailing(1);
  const e = errorOf(await send({ op: 'memory', args: [] }));
  assert.equal(e?.name, 'Error');
  assert.match(e.message, /^the worker could not send its result: could not be cloned$/);
  const next = await send({ op: 'memory', args: [] });
  assert.ok(Number.isInteger(next.msg.value.usedBytes));
});
