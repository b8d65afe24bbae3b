// A long-lived native benchmark process (bench/native/favor_bench.cpp): one command per line,
// one reply per line. Times are measured inside the process (no IPC in them).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export class NativeProcess {
  constructor(binary) {
    this.binary = binary;
    this.child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.waiting = [];
    this.exited = null;
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const next = this.waiting.shift();
      if (next) next.resolve(line);
    });
    this.child.on('exit', (code, signal) => {
      this.exited = `exited (${signal ?? code})`;
      for (const w of this.waiting.splice(0)) w.reject(new Error(`${binary} ${this.exited}`));
    });
    this.child.on('error', (e) => {
      this.exited = e.message;
      for (const w of this.waiting.splice(0)) w.reject(e);
    });
  }

  async command(line) {
    if (this.exited) throw new Error(`${this.binary} ${this.exited}`);
    const reply = await new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.child.stdin.write(`${line}\n`);
    });
    if (reply.startsWith('error ')) throw new Error(reply.slice(6));
    if (!reply.startsWith('ok')) throw new Error(`unexpected reply: ${reply}`);
    return reply.slice(2).trim();
  }

  async info() { return this.command('info'); }
  async load(file, { L, S, d, dv, m }) { await this.command(`load ${file} ${L} ${S} ${d} ${dv} ${m}`); }
  async run(kind, causal, reps = 1) {
    return (await this.command(`run ${kind} ${causal ? 1 : 0} ${reps}`)).split(/\s+/).map(Number);
  }
  async dump(kind, causal, file) { await this.command(`dump ${kind} ${causal ? 1 : 0} ${file}`); }

  close() {
    if (!this.exited) this.child.stdin.end('quit\n');
  }
}
