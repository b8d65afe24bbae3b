// The thread bench's rounds (bench/lib/thread-rounds.mjs), which Node's and the browser's thread
// benches share: every entry once per round, the order rotating from round to round, more rounds
// for short calls, and a short call made once untimed before its timed one.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MORE_ROUNDS, ROUNDS_MS, SHORT_MS, roundsFor, timeInRounds } from '../../bench/lib/thread-rounds.mjs';
import { machineTable } from '../../bench/lib/thread-table.mjs';

test('every entry is called once per round, each round starting one entry later', async () => {
  const calls = [];
  const entries = [40, 50, 60].map((ms, i) => ({ ms, time: async (twice) => { calls.push([i, twice]); return ms + i; } }));
  const times = await timeInRounds(entries, 4);
  const rounds = roundsFor(150, 4);
  assert.equal(rounds, Math.floor(ROUNDS_MS / 150));
  assert.equal(calls.length, 3 * rounds);
  for (let r = 0; r < rounds; ++r) assert.deepEqual(calls.slice(3 * r, 3 * r + 3).map(([i]) => i), [0, 1, 2].map((j) => (j + r) % 3));
  assert.ok(calls.every(([, twice]) => twice === false));
  assert.deepEqual(times.map((t) => t.length), [rounds, rounds, rounds]);
  assert.deepEqual(times[2], Array(rounds).fill(62));
});

test('short calls get more rounds, at most MORE_ROUNDS times reps, and are made twice', async () => {
  assert.equal(roundsFor(1000, 5), 5);  // long rounds: reps
  assert.equal(roundsFor(0.01, 5), MORE_ROUNDS * 5);
  const seen = [];
  await timeInRounds([{ ms: SHORT_MS - 1, time: (twice) => { seen.push(twice); return 1; } },
    { ms: SHORT_MS, time: (twice) => { seen.push(twice); return 1; } }], 3);
  assert.deepEqual(seen.slice(0, 2), [true, false]);
});

test("a machine's table names the browser it ran in, or Node", () => {
  const rows = [1, 2].map((T) => ({ id: 'favorSmall', label: 'FAVOR+, 1 head, L = 128', threads: T, ours: 1 / T, samples: [1 / T], used: T, peer: null }));
  const run = { cpu: 'CPU', cores: 2, date: '2026-12-01', rows, interleaved: true, peerInterleaved: true };
  assert.match(machineTable({ ...run, browser: 'Chromium 156' }, { reps: 5 }), /^### CPU, 2 cores \(Chromium 156, 2026-12-01\)/);
  assert.match(machineTable({ ...run, node: 'v26.10.0' }, { reps: 5 }), /^### CPU, 2 cores \(Node v26\.10\.0, 2026-12-01\)/);
  assert.match(machineTable({ ...run, node: 'v26' }, { reps: 5 }), /\| FAVOR\+, 1 head, L = 128, ms \| 1\.0 \(1\.0×\) \| 0\.50 \(2\.0×\) \| 2\.0× \|/);
});

test("a machine's table gives each T's wasm memory after the calls, and the call that grew it most", () => {
  const MiB = 2 ** 20;
  const row = (id, label, T, heap) => ({ id, label, threads: T, ours: 1, samples: [1], used: T, peer: null, heap });
  const rows = [row('favorSmall', 'small', 1, 20 * MiB), row('favor8', 'large', 1, 60 * MiB), row('favorSmall', 'small', 2, 50 * MiB),
    row('favor8', 'large', 2, 60 * MiB)];
  const run = { cpu: 'CPU', cores: 2, date: '2026-12-01', rows, interleaved: true, peerInterleaved: true, node: 'v26', heapAtLoad: { 1: 16 * MiB, 2: 16 * MiB } };
  const line = machineTable(run, { reps: 5 }).split('\n').find((l) => l.startsWith("Each T's wasm memory"));
  assert.ok(line, 'no line on the wasm memory');
  assert.match(line, /T = 1: 60 MiB \(40 of them from large\); T = 2: 60 MiB \(34 of them from small\)\.$/);
  assert.equal(machineTable({ ...run, rows: rows.map(({ heap, ...x }) => x) }, { reps: 5 }).includes("wasm memory"), false, 'runs before heap was kept');
});
