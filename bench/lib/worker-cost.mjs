// The measurement of bench/worker.mjs, the same in Node and in a browser page: the synchronous
// API against loadFavor({ worker: true }) copying its inputs and with { transfer: true } moving
// them (each timed call then gets fresh arrays, made outside its timing), on exact attention and
// FAVOR+ at each L and on a FAVOR+ decode step; and beside them the floor, a bare worker that
// answers each message with an array of the decode output's size (`echo`: the environment's
// own worker, { roundTrip(message), close() }). Every variant's output is first checked equal to
// the synchronous call's (one module: the same bits). Returns medians of ms per call.
import { gaussian, median } from './inputs.mjs';

export const CONFIG = { d: 64, m: 256, H: 8, sigma: 0.5, context: 1024 };

export async function measureWorkerCost(loadFavor, echo, { sizes, rounds, blockMs, log = () => {} }) {
  const { d, m, H, sigma, context } = CONFIG;
  const now = () => performance.now();
  const tensor = (dims, seed) => ({ data: gaussian(dims.reduce((a, b) => a * b, 1), seed, sigma), dims });
  const fresh = (t) => ({ data: t.data.slice(), dims: t.dims });
  const variants = [
    { id: 'sync', label: 'synchronous', favor: await loadFavor({ threads: 1 }) },
    { id: 'copy', label: 'worker: true (inputs copied)', favor: await loadFavor({ threads: 1, worker: true }) },
    { id: 'move', label: 'worker: true, transfer: true (inputs moved)', favor: await loadFavor({ threads: 1, worker: true, transfer: true }) },
  ];
  for (const v of variants) v.featureMap = await v.favor.createFeatureMap({ dim: d, features: m, seed: 42 });
  const info = { ...(await variants[0].favor.info) };

  // Repeats `once()` for ~blockMs per round (at least 3 times); `prepare()` runs untimed first.
  const block = async (once, prepare = () => undefined) => {
    let spent = 0, n = 0;
    while (spent < blockMs || n < 3) {
      const input = prepare();
      const t0 = now();
      await once(input);
      spent += now() - t0;
      n++;
    }
    return spent / n;
  };
  const timeCase = async (make, inputs) => {
    const argsFor = (v) => (v.id === 'move' ? inputs.map(fresh) : inputs);
    const reference = (await make(variants[0], argsFor(variants[0]))).data;
    for (const v of variants.slice(1)) {
      const out = (await make(v, argsFor(v))).data;
      let maxAbs = 0;
      for (let j = 0; j < out.length; j++) maxAbs = Math.max(maxAbs, Math.abs(out[j] - reference[j]));
      if (out.length !== reference.length || !(maxAbs === 0)) throw new Error(`${v.label} differs from the synchronous call by ${maxAbs}`);
    }
    const per = variants.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < variants.length; k++) {
        const i = (k + r) % variants.length;
        per[i].push(await block((a) => make(variants[i], a), () => argsFor(variants[i])));
      }
    }
    return Object.fromEntries(variants.map((v, i) => [v.id, median(per[i])]));
  };

  const rows = [];
  for (const L of sizes) {
    const q = tensor([L, d], 1000 + L), k = tensor([L, d], 2000 + L), v = tensor([L, d], 3000 + L);
    for (const kind of ['exact', 'favor']) {
      const make = kind === 'exact'
        ? (x, [a, b, c]) => x.favor.exactAttention(a, b, c)
        : (x, [a, b, c]) => x.favor.favorAttention(a, b, c, { featureMap: x.featureMap });
      const ms = await timeCase(make, [q, k, v]);
      rows.push({ case: kind, L, ms });
      log(`${kind} L = ${L}: ${variants.map((x) => `${x.id} ${ms[x.id].toFixed(3)} ms`).join(', ')}`);
    }
  }
  // Decode: each variant's own FAVOR+ state, filled with the same positions, then steps.
  const states = [];
  for (const v of variants) {
    const state = await v.favor.createCausalState({ method: 'favor', featureMap: v.featureMap });
    const x = tensor([H, context, d], 7);
    await state.append(x, x, x);
    states.push(state);
  }
  const step = tensor([H, 1, d], 8);
  const decodeMs = await timeCase((x, [a, b, c]) => states[variants.indexOf(x)].append(a, b, c), [step, step, step]);
  rows.push({ case: 'decode', L: 1, ms: decodeMs });
  log(`decode step: ${variants.map((x) => `${x.id} ${decodeMs[x.id].toFixed(3)} ms`).join(', ')}`);
  for (const s of states) await s.dispose();
  for (const v of variants) {
    await v.featureMap.dispose();
    await v.favor.dispose?.();
  }
  // The floor, sent the decode step's three inputs.
  const per = [];
  for (let r = 0; r < rounds; r++) per.push(await block(() => echo.roundTrip([step.data, step.data, step.data])));
  echo.close();
  const echoMs = median(per);
  log(`bare echo: ${echoMs.toFixed(3)} ms`);
  return { info, rows, echoMs };
}

// The echo worker's source: answers each message with an array of the decode output's size.
export const ECHO_OUTPUT_FLOATS = CONFIG.H * CONFIG.d;
