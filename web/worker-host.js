// The worker side of loadFavor({ worker: true }): serves one favor instance to the page (or Node
// thread) that started it. Messages: { id, op, target, args } in; { id, value } or
// { id, error: { name, message, code } } out, one reply per message, in order. An op is a call of
// web/operations.js, or with a `target`, a method or getter of an object there (or dispose). The
// objects stay here behind handle numbers; their proxies (web/worker-client.js) name them in
// `target` and, encoded by web/worker-messages.js, in arguments.
import { heartbeat } from './load-watch.js';
import { OBJECTS, OPERATIONS } from './operations.js';
import { decodeArgs } from './worker-messages.js';

// Only the table's calls, methods and getters (op = the getter's name) are served.
const has = (table, op) => Object.hasOwn(table, op);

export function serve(port, loadFavor) {
  let favor = null;
  const handles = new Map();  // id -> { object, kind }
  let next = 1;
  const tombstones = {};  // a disposed object of each kind: the API's own errors for a disposed proxy

  // A new object kept here; its proxy gets its number and its settings.
  const keep = (object, kind) => {
    const id = next++;
    handles.set(id, { object, kind });
    return { id, props: Object.fromEntries(OBJECTS[kind].settings.map((name) => [name, object[name]])) };
  };

  const tombstone = (kind) => {
    if (!tombstones[kind]) {
      const object = kind === 'state' ? favor.createCausalState({ method: 'exact' })
        : kind === 'matrix' ? favor.packMatrix({ data: new Float32Array(1), dims: [1, 1] }) : favor.createFeatureMap({ dim: 1, features: 1 });
      object.dispose();
      tombstones[kind] = object;
    }
    return tombstones[kind];
  };
  const resolve = (id, kind) => handles.get(id)?.object ?? tombstone(kind);  // (ids start at 1: 0 is a disposed proxy's)

  function run({ op, target, args }) {
    if (target !== undefined) {
      const entry = handles.get(target);
      if (op === 'dispose') {
        entry?.object.dispose();
        handles.delete(target);
        return undefined;
      }
      if (!entry) throw new TypeError(`${op}: no such object in the worker`);
      const { getters, methods } = OBJECTS[entry.kind];
      if (getters.includes(op)) return entry.object[op];
      if (!has(methods, op)) throw new TypeError(`${op}: not a method of this object`);
      const value = entry.object[op](...decodeArgs(args, resolve));
      return value === entry.object ? undefined : value;
    }
    if (!has(OPERATIONS, op)) throw new TypeError(`${op}: not a favor-attention call`);
    const value = favor[op](...decodeArgs(args, resolve));
    return has(OBJECTS, OPERATIONS[op].returns) ? keep(value, OPERATIONS[op].returns) : value;
  }

  const reply = (msg, transfer) => {
    try {
      port.postMessage(msg, transfer);
    } catch (e) {
      port.postMessage({ id: msg.id, error: { name: 'Error', message: `the worker could not send its result: ${e?.message ?? e}` } });
    }
  };
  const fail = (id, e) => reply({ id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } }, []);

  return async (msg) => {
    if (msg.op === 'load') {
      try {
        const loading = loadFavor(...decodeArgs(msg.args, resolve));
        heartbeat(() => port.postMessage({ alive: true }), loading);  // the page's side watches for a freeze
        favor = await loading;
        reply({ id: msg.id, value: { info: { ...favor.info } } }, []);
      } catch (e) {
        fail(msg.id, e);
      }
      return;
    }
    try {
      const value = run(msg);
      // Outputs are fresh arrays of their own: moved, never copied.
      reply({ id: msg.id, value }, value?.data instanceof Float32Array ? [value.data.buffer] : []);
    } catch (e) {
      fail(msg.id, e);
    }
  };
}
