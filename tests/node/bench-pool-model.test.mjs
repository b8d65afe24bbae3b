// The pool model of bench/work-span.mjs (bench/lib/pool-model.mjs) on small traces whose time on
// T threads follows by hand from how src/favor/threads/pool.cpp deals indices out: home ranges first,
// then the others' ranges; regions inside an index helped by the threads with none left; the
// caller alone outside regions; a region's threads capped by its invitation.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { homeRange, simulatePool } from '../../bench/lib/pool-model.mjs';

const region = (t, ...indices) => ({ t, i: indices });

test('home ranges match thread_plan.hpp: contiguous, in order, index t for thread t when fewer', () => {
  assert.deepEqual([0, 1, 2].map((p) => homeRange(10, 3, p)), [[0, 3], [3, 6], [6, 10]]);
  assert.deepEqual([0, 1, 2, 3].map((p) => homeRange(2, 4, p)), [[0, 1], [1, 2], [2, 2], [2, 2]]);
});

test('serial steps run on the caller alone; a region of equal indices splits evenly', () => {
  // 1 s alone, 4 x 1 s on 2 threads (2 s), 0.5 s alone.
  assert.equal(simulatePool([1, region(2, [1], [1], [1], [1]), 0.5], 2), 3.5);
  assert.equal(simulatePool([1, region(2, [1], [1], [1], [1]), 0.5], 1), 5.5);
});

test('home ranges first, then the others: a long index first in a range is not stolen', () => {
  // Ranges [0, 2) and [2, 4): thread 0 runs index 0 (3 s); thread 1 runs 2 and 3, then takes 1
  // from thread 0's range at t = 2 and ends at 3.
  assert.equal(simulatePool([region(2, [3], [1], [1], [1])], 2), 3);
  // [1, 1, 3, 1]: thread 0 runs 0 and 1, then takes 3 from thread 1's range at t = 2 while thread
  // 1 runs 2: 3 s. Dealt from one counter, thread 0 would take 2 at t = 1 and end at 4.
  assert.equal(simulatePool([region(2, [1], [1], [3], [1])], 2), 3);
});

test('a region inside an index is helped by the threads that have no index left', () => {
  // 4 threads, 2 indices: index 0 publishes 4 x 1 s, index 1 is 1 s. Threads 0, 2, 3 take three
  // nested indices at t = 0; thread 1 takes the fourth at t = 1; the region ends at 2.
  assert.equal(simulatePool([region(4, [0, region(1, [1], [1], [1], [1]), 0], [1])], 4), 2);
  // On 2 threads, thread 1 joins after its own index: thread 0 runs three nested indices, 3 s.
  assert.equal(simulatePool([region(2, [0, region(1, [1], [1], [1], [1]), 0], [1])], 2), 3);
});

test('the publishing thread waits for the nested indices taken before it goes on', () => {
  // Thread 0 takes nested index 0 (1 s), thread 1 nested index 1 (3 s); thread 0 then waits
  // until 3 and runs its 2 s tail: 5 s. (Thread 1 had no index of its own: the region has one.)
  assert.equal(simulatePool([region(2, [0, region(1, [1], [3]), 2])], 2), 5);
});

test('a region invites at most its own thread count and at most T', () => {
  // Invited 2 of 4 threads: 4 x 1 s take 2 s, not 1.
  assert.equal(simulatePool([region(2, [1], [1], [1], [1])], 4), 2);
  // Invited 8 on 2 threads: 2 threads.
  assert.equal(simulatePool([region(8, [1], [1], [1], [1])], 2), 2);
});

test('nested regions inside nested regions are published too', () => {
  // One index publishes 2 indices, each of which publishes 2 x 1 s: 4 x 1 s of work on 4 threads
  // (2 of them idle at first and joining as regions appear): 1 s.
  const inner = () => [0, region(1, [1], [1]), 0];
  assert.equal(simulatePool([region(4, [0, region(1, inner(), inner()), 0])], 4), 1);
});

test('a slower thread: the others take over only the pieces it has not begun', () => {
  // 4 x 1 s on 2 threads, thread 1 at 1.5 s a piece: thread 0 runs 0 and 1 (to 2 s); thread 1
  // runs 2 (to 1.5) and then 3, its own, begun before thread 0 runs out: 3 s.
  const four = [region(2, [1], [1], [1], [1])];
  assert.equal(simulatePool(four, 2, { speed: [1, 1.5] }), 3);
  // 8 x 0.5 s: thread 1 has begun 3 pieces (to 2.25) when thread 0 ends its own at 2 and takes
  // thread 1's last: 2.5 s.
  const eight = [region(2, ...Array.from({ length: 8 }, () => [0.5]))];
  assert.equal(simulatePool(eight, 2, { speed: [1, 1.5] }), 2.5);
  // A slower caller: its serial step takes 1.5 s, its own range 3 s (indices 0 and 1 from 1.5 to
  // 4.5), thread 1's ends at 3.5 with nothing left to take.
  assert.equal(simulatePool([1, ...four], 2, { speed: [1.5] }), 4.5);
});

test('a helper late to the first region: the others take its range; it joins the next', () => {
  const two = [region(2, [1], [1], [1], [1]), region(2, [1], [1])];
  // 0.5 s late: it runs 2 and 3 from 0.5 to 2.5 while thread 0 runs 0 and 1; then 1 s.
  assert.equal(simulatePool(two, 2, { late: [0, 0.5] }), 3.5);
  // 2.5 s late: thread 0 has run 0 and 1 and begun 2; thread 1 takes 3 (2.5 to 3.5); then 1 s.
  assert.equal(simulatePool(two, 2, { late: [0, 2.5] }), 4.5);
  // 4.5 s late: thread 0 runs the whole first region (the pool closes it without a thread that
  // has not joined) and index 0 of the next (4 to 5); thread 1 joins there and runs 1 (to 5.5).
  assert.equal(simulatePool(two, 2, { late: [0, 4.5] }), 5.5);
});

test('a malformed trace is a TypeError', () => {
  assert.throws(() => simulatePool({ t: 1, i: [] }, 2), TypeError);
});
