// The targets' verdicts on every CPU `npm run bench` has run on (bench/targets-by-cpu.json,
// committed): ratios such as relaxed against plain SIMD depend on the microarchitecture (on Zen 5
// separate multiplies and adds already run at the fused rate; on Zen 3 they do not), so the report
// shows the latest run of each CPU beside this one's.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

// AMD's families by microarchitecture (the hypervisor here hides the model name: "AMD EPYC").
function amdCore(family, model) {
  if (family === 23) return model >= 0x30 ? 'Zen 2' : 'Zen';
  if (family === 25) return (model >= 0x10 && model < 0x20) || (model >= 0x60 && model < 0x80) || (model >= 0xa0 && model < 0xb0) ? 'Zen 4' : 'Zen 3';
  if (family === 26) return 'Zen 5';
  return null;
}

// This machine's CPU from /proc/cpuinfo: what the report names it and the key of its entry.
export function cpuIdentity(cpuinfo) {
  const field = (name) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(cpuinfo)?.[1]?.trim() ?? null;
  const model = field('model name') ?? 'unknown CPU';
  const vendor = field('vendor_id');
  const family = Number(field('cpu family'));
  const number = Number(field('model'));
  const flags = (field('flags') ?? '').split(' ').filter((f) => /^(sse4_2|avx|avx2|fma|avx512f)$/.test(f)).join(' ');
  const core = vendor === 'AuthenticAMD' ? amdCore(family, number) : null;
  const id = Number.isFinite(family) && Number.isFinite(number) ? `family ${family}, model ${number}` : null;
  return {
    key: [model, core ?? id ?? flags].join(' | '),  // one entry per microarchitecture where it is known
    name: `${model}${core ? ` (${core})` : ''}${id ? `, ${id}` : ''}`,
    flags,
  };
}

// This machine's CPU by name: from /proc/cpuinfo (with its family and model, and AMD's core: the
// machines here all call themselves "AMD EPYC"), or os.cpus()'s model name where it cannot be read.
export function thisCpuName() {
  try {
    return cpuIdentity(readFileSync('/proc/cpuinfo', 'utf8')).name;
  } catch {
    return cpus()[0]?.model?.trim() ?? 'unknown CPU';
  }
}

export function readHistory(file) {
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
}

// The history with this run's entry (its CPU's key replaces any older one), in key order; written
// back to the file when `write` (the committed report's run), else only returned (--quick, --out).
export function recordTargets(file, data, targets, { write }) {
  const env = data.environment;
  if (!env.cpuKey) return readHistory(file);
  const entry = {
    key: env.cpuKey, cpu: env.cpuName, flags: env.flags, date: env.date.slice(0, 10), commit: env.commit, node: env.node,
    ceiling: { wasm: env.ceiling?.wasm ?? null, relaxed: env.ceiling?.relaxed ?? null },
    targets: targets.map(({ id, verdict, headline }) => ({ id, verdict, headline })),
  };
  const history = readHistory(file).filter((e) => e.key !== entry.key);
  history.push(entry);
  history.sort((a, b) => a.key.localeCompare(b.key));
  if (write) writeFileSync(file, `${JSON.stringify(history, null, 1)}\n`);
  return history;
}
