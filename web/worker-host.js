// The worker side of loadFavor({ worker: true }): serves one favor instance to the page (or Node
// thread) that started it. Messages: { id, op, target, args } in; { id, value } or
// { id, error: { name, message, code } } out. Feature maps and causal states stay here behind
// handle numbers; their proxies (web/worker-client.js) name them in `target` and in options.

export function serve(port, loadFavor) {
  let favor = null;
  const handles = new Map();
  let next = 1;
  const reply = (msg, transfer = []) => port.postMessage(msg, transfer);

  const keep = (object, kind) => {
    const id = next++;
    handles.set(id, object);
    if (kind === 'featureMap') {
      const { dim, features, numFeatures, kernel, sampling, epsilon, rho } = object;
      return { __handle: id, kind, props: { dim, features, numFeatures, kernel, sampling, epsilon, rho } };
    }
    return { __handle: id, kind, props: { method: object.method } };
  };
  const resolve = (value) => {
    if (value && typeof value === 'object' && '__handle' in value) {
      const object = handles.get(value.__handle);
      if (!object) throw new TypeError('featureMap: this handle has been disposed');
      return object;
    }
    if (value && typeof value === 'object' && !ArrayBuffer.isView(value) && !Array.isArray(value) && !('data' in value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
    }
    return value;
  };
  const outputs = (value) => (value && value.data instanceof Float32Array ? [value.data.buffer] : []);

  async function run({ op, target, args }) {
    if (op === 'load') {
      favor = await loadFavor(args[0]);
      return { info: { ...favor.info } };
    }
    if (target !== undefined) {
      const object = handles.get(target);
      if (op === 'dispose') {
        object?.dispose();
        handles.delete(target);
        return undefined;
      }
      if (!object) throw new TypeError(`${op}: this object has been disposed`);
      if (op === 'get') return object[args[0]];
      const value = object[op](...args.map(resolve));
      return value === object ? undefined : value;
    }
    if (op === 'createFeatureMap') return keep(favor.createFeatureMap(resolve(args[0])), 'featureMap');
    if (op === 'createCausalState') return keep(favor.createCausalState(resolve(args[0])), 'state');
    if (op === 'dispose') {
      favor.dispose();
      return undefined;
    }
    return favor[op](...args.map(resolve));
  }

  const onMessage = async (msg) => {
    try {
      const value = await run(msg);
      reply({ id: msg.id, value }, outputs(value));
    } catch (e) {
      reply({ id: msg.id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } });
    }
  };
  return onMessage;
}
