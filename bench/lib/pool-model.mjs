// The thread pool of src/favor/threads/pool.cpp as a model: how long a traced call (bench/native/work_span.cpp's
// trace: an index is [serial, region, serial, ..., serial] in seconds, a region { t: threads
// invited, i: [index, ...] }) takes on T threads that each run as fast as one alone and hand work
// over for free, when its indices are dealt out as the pool deals them:
// - a region started outside any region invites min(t, T) threads; thread p first takes the
//   indices of its home range (homeRange, as thread_plan.hpp's home_range), in order, then what is
//   left of the others' ranges, p + 1, p + 2, … around;
// - a region started inside an index is published: the index's thread takes its indices one at a
//   time, and the invited threads that have no index of their own left join the first published
//   region that has indices left and take them until none is left; once the publishing thread
//   finds none left, it waits for the ones taken to finish, without helping elsewhere;
// - the caller (thread 0) runs what lies outside regions, and a region ends when every thread
//   that joined it has run out of indices and finished the ones it took (a helper that has not
//   joined by then is not waited for).
// What it leaves out is what a machine adds: threads slower together than alone, wake-ups,
// hand-offs. Two of those can be put back in, thread by thread (options of simulatePool): a
// thread that runs slower than the others (speed[p]: its time for a second of one thread's
// work), and a helper that joins the call's first region late (late[p] seconds after it starts:
// woken from sleep).

export function homeRange(count, threads, thread) {
  if (count < threads) return [Math.min(thread, count), Math.min(thread + 1, count)];
  return [Math.floor((count * thread) / threads), Math.floor((count * (thread + 1)) / threads)];
}

// Seconds the traced call `trace` takes on `T` threads; speed and late as above (thread p: index
// p, 0 the caller; missing entries 1 and 0).
export function simulatePool(trace, T, { speed = [], late = [] } = {}) {
  if (!Array.isArray(trace)) throw new TypeError('trace: expected an index, [serial, region, …, serial]');
  const pace = (p) => speed[p] ?? 1;
  const published = [];  // nested regions with indices possibly left: { region, next, taken }
  let top = null;        // the region outside any region now running: { id, invited, ranges, running }
  let regions = 0;

  // Thread programs are generators: they yield { work: seconds } or { until: () => boolean }.
  function* runIndex(index, p) {
    for (const step of index) {
      if (typeof step === 'number') {
        if (step > 0) yield { work: step * pace(p) };
      } else {
        yield* runNested(step, p);
      }
    }
  }
  function* takeAll(job, p) {
    while (job.next < job.region.i.length) {
      const i = job.next++;
      ++job.taken;
      yield* runIndex(job.region.i[i], p);
      --job.taken;
    }
  }
  function* runNested(region, p) {
    const job = { region, next: 0, taken: 0 };
    published.push(job);
    yield* takeAll(job, p);
    published.splice(published.indexOf(job), 1);
    yield { until: () => job.taken === 0 };
  }
  // Thread p's part of the top region r: its range, the others', then help until none is running.
  function* regionPart(r, p) {
    ++r.joined;
    for (let k = 0; k < r.invited; ++k) {
      const range = r.ranges[(p + k) % r.invited];
      while (range.next < range.end) {
        const i = range.next++;
        ++r.running;
        yield* runIndex(r.region.i[i], p);
        --r.running;
      }
    }
    const open = () => published.find((j) => j.next < j.region.i.length);
    while (r.running > 0) {
      const job = open();
      if (job) {
        yield* takeAll(job, p);
      } else {
        yield { until: () => r.running === 0 || open() !== undefined };
      }
    }
    ++r.finished;
  }
  function* caller(index) {
    for (const step of index) {
      if (typeof step === 'number') {
        if (step > 0) yield { work: step * pace(0) };
        continue;
      }
      const invited = Math.max(1, Math.min(step.t, T));
      const count = step.i.length;
      const r = { id: ++regions, region: step, invited, running: 0, joined: 0, finished: 0, ranges: [] };
      for (let p = 0; p < invited; ++p) {
        const [begin, end] = homeRange(count, invited, p);
        r.ranges.push({ next: begin, end });
      }
      top = r;
      yield* regionPart(r, 0);
      // Closed once the threads that joined have finished: a helper still waking then does not join.
      yield { until: () => r.finished === r.joined };
      top = null;
    }
  }
  function* helper(p) {
    let seen = 0;
    if (late[p] > 0) {
      yield { until: () => top !== null && p < top.invited };
      yield { work: late[p] };
    }
    for (;;) {
      yield { until: () => top !== null && top.id !== seen && p < top.invited };
      seen = top.id;
      yield* regionPart(top, p);
    }
  }

  const threads = Array.from({ length: T }, (_, p) => ({ gen: p === 0 ? caller(trace) : helper(p), at: 0, until: null, done: false }));
  let now = 0;
  const resume = (t) => {
    const r = t.gen.next();
    if (r.done) {
      t.done = true;
    } else if (r.value.work !== undefined) {
      t.at = now + r.value.work;
    } else {
      t.at = null;
      t.until = r.value.until;
    }
  };
  for (;;) {
    // Every thread that can go on at `now` does, in thread order, until none can.
    for (let progress = true; progress;) {
      progress = false;
      for (const t of threads) {
        if (t.done) continue;
        if (t.at === null && t.until()) t.at = now, t.until = null;
        if (t.at !== null && t.at <= now) {
          resume(t);
          progress = true;
        }
      }
    }
    if (threads[0].done) return now;
    const next = Math.min(...threads.filter((t) => !t.done && t.at !== null).map((t) => t.at));
    if (!Number.isFinite(next)) throw new Error('pool model: every thread waits (a trace the pool could not run)');
    now = next;
  }
}
