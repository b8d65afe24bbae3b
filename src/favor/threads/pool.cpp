#include "favor/threads/pool.hpp"

#include "favor/threads/caller_task.hpp"
#include "favor/threads/region.hpp"
#include "favor/threads/rouse.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/threads/timeline.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#ifndef FAVOR_SERIAL_ONLY
#include <condition_variable>
#include <thread>
#endif

namespace favor {

namespace {
FAVOR_THREAD_LOCAL std::function<void()>* t_caller_task = nullptr;  // a CallerTask's, until it runs
std::atomic<long long> g_rousings{0};

#ifndef FAVOR_SERIAL_ONLY
FAVOR_THREAD_LOCAL int t_pool_thread = 0;  // 0: a thread that starts regions; h + 1: the pool's helper h
FAVOR_THREAD_LOCAL int t_index_depth = 0;  // indices of the pool's jobs this thread is inside

using detail::t_in_parallel;
using detail::t_region;
using detail::t_share;
using detail::threads_per_index;

// The C++ runtime sets a thread's exception-handling state up on its first caught exception (16
// bytes per thread in the pthreads wasm build, kept while the thread lives): the pool's threads
// and the thread that starts them set it up at once, so that a first error later allocates
// nothing that stays.
void prepare_exception_state() {
  try {
    throw 0;
  } catch (...) {
  }
}

// Helper threads started once and kept: in Emscripten starting a std::thread per region cost as
// much as a short region's work. A region is one job: the caller and the first
// threads - 1 helpers take its indices one at a time, each first from its home range
// (home_range: the same indices at every call of the same shape, so a decoder's state per head
// stays in the cache of the core that updates it), then from what is left of the others' (work
// per index may vary, and which thread runs an index never changes what it computes); the caller
// returns when they are all done.
//
// Threads spin a while before they sleep, both the helpers between jobs and the caller waiting
// for them: a wake-up through a futex took tens of microseconds here (Node, Chromium), as long as
// a decode step's work, and a mutex taken on every job by every thread cost as much again. So a
// job is handed over through atomics alone, and the mutex and condition variables serve only
// threads that have gone to sleep. A helper joins a job only while it is open: once the caller
// has run out of indices it closes the job and waits only for the helpers that joined, never for
// one still waking up (which would find nothing left to do).
class Pool {
 public:
  // False if another thread's job is running (the caller then runs its loop itself).
  bool run(Index count, int threads, void (*call)(void*, Index), void* context) {
    bool idle = false;
    if (!job_running_.compare_exchange_strong(idle, true)) return false;
    struct JobEnds {
      std::atomic<bool>& running;
      ~JobEnds() { running.store(false); }
    } const job_ends{job_running_};
    detail::Recording* const recording = detail::recording();
    // Set up under the pool's mutex, which a rousing holds only to start its wave: the caller waits
    // for it rather than running its loop alone.
    std::unique_lock<std::mutex> setup(pool_mutex_);
    const int helpers = std::min<int>(threads - 1, static_cast<int>(helpers_.size()));
    job_.call = call, job_.context = context;
    job_.share = threads_per_index(count, threads);
    job_.region = {helpers + 1, count};
    job_.in_flight.store(0, std::memory_order_relaxed);
    job_.range = ranges_, job_.ranges = helpers + 1;
    for (int p = 0; p <= helpers; ++p) {
      const auto [begin, end] = home_range(count, helpers + 1, p);
      ranges_[p].next.store(begin, std::memory_order_relaxed);
      ranges_[p].end = end;
    }
    job_.error_index.store(count, std::memory_order_relaxed), job_.error = nullptr;
    if (recording) detail::region_started(*recording, helpers + 1);
    const std::uint64_t sequence = (ticket_.load(std::memory_order_relaxed) >> kHelperBits) + 1;
    active_.store(sequence << kSequenceShift, std::memory_order_relaxed);  // open, none joined
    ticket_.store((sequence << kHelperBits) | static_cast<std::uint64_t>(helpers));
    // The wave after the ticket: whoever takes a helper of it has seen the ticket stored before it
    // reads the helper's flag, as wake() needs.
    const std::uint64_t wave = start_wave(helpers, false);
    setup.unlock();
    spread_wave(wave, kHelperLimit);
    run_caller_task();
    work(job_, 0);
    help_until_done(job_);
    const auto none_working = [this] { return (active_.load() & kJoinedMask) == 0; };
    if ((active_.fetch_or(kClosed) & kJoinedMask) && !spin_until(none_working, kCallerSpin)) {
      caller_sleeps_.store(true);
      std::unique_lock<std::mutex> lock(done_mutex_);
      done_.wait(lock, none_working);
      caller_sleeps_.store(false, std::memory_order_relaxed);
    }
    if (recording) detail::region_ended(*recording);
    if (std::exception_ptr error = std::exchange(job_.error, nullptr)) std::rethrow_exception(error);
    return true;
  }

  // A region started inside a region: published for the outer region's threads to help with,
  // run here as well; returns once every index has finished (false: no free slot, run it serially).
  bool run_nested(Index count, void (*call)(void*, Index), void* context) {
    Job job;
    job.call = call, job.context = context, job.error_index.store(count, std::memory_order_relaxed);
    job.region = t_region;
    Range all;
    all.end = count;
    job.range = &all;
    Slot* slot = nullptr;
    for (Slot& s : slots_) {
      std::unique_lock<std::mutex> lock(s.mutex, std::try_to_lock);
      if (lock && !s.job.load(std::memory_order_relaxed)) {
        s.job.store(&job, std::memory_order_relaxed);
        slot = &s;
        break;
      }
    }
    if (!slot) return false;
    work(job, 0);
    {
      std::lock_guard<std::mutex> lock(slot->mutex);
      slot->job.store(nullptr, std::memory_order_relaxed);  // no helper joins after this
    }
    while (job.joined.load(std::memory_order_acquire) > 0 || job.in_flight.load() > 0) std::this_thread::yield();
    if (job.error) std::rethrow_exception(job.error);
    return true;
  }

  // Starts helpers up to `wanted` (fewer if the platform has no more threads: the ones there do
  // the work) and runs one job on each (a barrier: every thread takes one index and waits for the
  // others). set_max_threads does it before any region, so that what the threads keep (their
  // stacks, and what a first job allocates for them: 24 bytes in Emscripten 3.1.6) is part of
  // what a module holds from the start. Only when it started one: the others ran it before (a
  // barrier of every thread is slow where they outnumber the cores, and tests change the count
  // hundreds of times).
  void reserve(int wanted) {
    prepare_exception_state();
    int threads;
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      const std::size_t before = helpers_.size();
      try {
        while (static_cast<int>(helpers_.size()) < std::min(wanted, kHelperLimit))
          helpers_.emplace_back([this, id = static_cast<int>(helpers_.size())] { helper(id); });
      } catch (...) {  // no thread to be had (std::system_error, or no memory for one)
      }
      if (helpers_.size() == before) return;
      threads = static_cast<int>(helpers_.size()) + 1;
    }
    std::atomic<int> arrived{0};
    const auto barrier = [&](Index) {
      arrived.fetch_add(1);
      while (arrived.load() < threads) {
      }
    };
    // Never run alone (the barrier would wait for ever): after another thread's job, if one runs.
    while (!run(threads, threads, [](void* b, Index i) { (*static_cast<decltype(barrier)*>(b))(i); },
                const_cast<void*>(static_cast<const void*>(&barrier))))
      std::this_thread::yield();
  }

  // For tests: whether each helper started sleeps with no wake-up on its way. One notified but
  // not yet run still has its flag set (on a loaded machine, for tens of milliseconds), and a
  // test that took it for asleep would rouse it while it wakes.
  std::vector<bool> asleep() {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    std::vector<bool> result(helpers_.size());
    for (std::size_t id = 0; id < helpers_.size(); ++id) {
      std::lock_guard<std::mutex> sleeping(sleep_[id].mutex);
      result[id] = sleep_[id].asleep.load() && !sleep_[id].woken;
    }
    return result;
  }

  // Wakes the first `helpers` helpers that sleep, and (keep_spinning) keeps those still spinning
  // after their last job spinning, for a job about to come (rouse.hpp). Not while a job runs (its
  // helpers are awake or being woken for it; a rousing wave would stop that job's wave), nor
  // while the pool's mutex is held (a job being set up, or helpers started).
  void rouse(int helpers, bool keep_spinning) {
    std::uint64_t wave;
    {
      std::unique_lock<std::mutex> lock(pool_mutex_, std::try_to_lock);
      if (!lock || job_running_.load()) return;
      helpers = std::min<int>(helpers, static_cast<int>(helpers_.size()));
      if (helpers < 1) return;
      // Before the wave reads the helpers' flags: a helper that sets its flag to sleep then reads
      // this word, so either the wave sees it asleep or it sees the rousing (wake()).
      if (keep_spinning)
        rousing_.store(((rousing_.load(std::memory_order_relaxed) >> kHelperBits) + 1) << kHelperBits |
                       static_cast<std::uint64_t>(helpers));
      wave = start_wave(helpers, true);
    }
    spread_wave(wave, kRouserWakes);
  }

 private:
  // The job's sequence number and its number of helpers in one word, so that a helper that
  // wakes late reads both of the same job.
  static constexpr int kHelperBits = 16;
  static constexpr int kMaxHelpers = (1 << kHelperBits) - 1;
  // The job's state for joining: its sequence number (the high 32 bits), closed (bit 31) and the
  // helpers that joined and are not done yet (the low bits).
  static constexpr int kSequenceShift = 32;
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 31, kJoinedMask = kClosed - 1;
  // Sleeping helpers are woken in waves (start_wave): the thread that starts one takes them in
  // turn and wakes those that sleep, and so does each helper it wakes, until none is left. A
  // wake-up costs the thread that makes it several microseconds (tens on a VM that wakes a
  // sleeping virtual CPU through its host), so a caller waking 15 helpers one after another spent
  // hundreds of microseconds before its own work, and the last helper started that late; in a
  // wave, the threads waking the others double every wake-up's time. A job's caller wakes helpers
  // until none is left (never later than alone); rouse() wakes kRouserWakes and returns, so that
  // the caller copies its inputs while the helpers it woke wake the rest.
  static constexpr int kRouserWakes = 2;
  // wave_: the wave's number (the high 32 bits), whether it rouses (bit 31) rather than wakes
  // for the job whose ticket is out, how many helpers it is for (bits 16-30) and the next one to
  // look at (the low 16 bits).
  static constexpr std::uint64_t kWaveRouses = std::uint64_t{1} << 31;

  // A new wave for helpers [0, helpers); returns its number. Under pool_mutex_, so one thread at a
  // time starts waves (the number is one past the last); a claim on the older wave that comes
  // after the store fails, as the word has changed.
  std::uint64_t start_wave(int helpers, bool rouses) {
    const std::uint64_t number = (wave_.load(std::memory_order_relaxed) >> 32) + 1;
    wave_.store(number << 32 | (rouses ? kWaveRouses : 0) | static_cast<std::uint64_t>(helpers) << 16);
    return number;
  }

  // Takes the helpers of wave `number` in turn and wakes those that sleep, until it has none left,
  // a newer wave has begun, or `most` have been woken here. Each helper is taken once, by one
  // thread: it is woken at most once by a wave.
  void spread_wave(std::uint64_t number, int most) {
    std::uint64_t wave = wave_.load();
    while ((wave >> 32) == number && (wave & 0xffff) < ((wave >> 16) & 0x7fff)) {
      if (!wave_.compare_exchange_weak(wave, wave + 1)) continue;
      if (wake(static_cast<int>(wave & 0xffff), wave & kWaveRouses) && --most == 0) return;
      wave = wave_.load();
    }
  }

  // Wakes helper `id` if it sleeps; whether it did. For a job: the ticket is stored before the
  // flag is read (before the wave begins), and a helper sets its flag before it reads the ticket,
  // so one of the two sees the other; a helper sets its flag and waits under its own mutex, so
  // once the waker has held that mutex the helper either waits or has seen the ticket. The
  // notification comes after the mutex is released, and the helper relocks a mutex no other
  // thread wants (with one mutex for all, helpers woken together queued for it). Roused: marked
  // so under its mutex only while it still sleeps, so a mark is never left for a helper that woke
  // meanwhile (it would spin for nothing at its next sleep).
  bool wake(int id, bool rouses) {
    Sleep& sleep = sleep_[id];
    if (!sleep.asleep.load()) return false;
    {
      std::lock_guard<std::mutex> lock(sleep.mutex);
      if (rouses) {
        if (!sleep.asleep.load(std::memory_order_relaxed)) return false;
        sleep.roused = true;
      }
      if (sleep.asleep.load(std::memory_order_relaxed)) sleep.woken = true;  // (not if it woke meanwhile)
    }
    sleep.wake.notify_one();
    return true;
  }

  // How long a thread spins before it sleeps: a helper between jobs (a decode loop calls again
  // within tens of microseconds), the caller waiting for the helpers that joined (they finish
  // within an index's time). Short, because a spinning thread holds a core that another thread
  // of the process may need (on a machine with fewer cores than threads; on this project's
  // 2-vCPU VM, when the host runs both vCPUs on one core).
  static constexpr std::chrono::microseconds kHelperSpin{100}, kCallerSpin{100}, kHelperNap{50};
  // How long a helper woken by rouse() spins for the job it was woken for: the caller is still
  // preparing it (copying its inputs in: 1 MB took up to 200 us on a lent VM). Those still
  // spinning after a call spin as long too only where the threads are no more than the cores:
  // where they outnumbered them (4 on this project's 2 vCPUs) that made calls in a loop 15-20%
  // slower, the spinners holding cores the working threads needed.
  static constexpr std::chrono::microseconds kRousedSpin{500};

  // A share of a job's indices: [next, end) left to take.
  struct alignas(64) Range {
    std::atomic<Index> next{0};
    Index end = 0;
  };

  struct Job {
    void (*call)(void*, Index) = nullptr;
    void* context = nullptr;
    Range* range = nullptr;           // its ranges: one per thread invited (a nested job: one)
    int ranges = 1;
    std::atomic<Index> in_flight{0};  // indices taken and not finished
    std::atomic<int> joined{0};       // a nested job's helpers still in it
    int share = 1;                    // threads per index, for available_threads() inside
    RegionShape region;               // for enclosing_region() inside: a nested job's, its publisher's
    std::atomic<Index> error_index{0};  // the lowest index that threw (count: none), under error_mutex_
    std::exception_ptr error;
  };

  // Nested regions: a thread running an index of a region publishes its inner loop here as a job
  // of its own, and threads of the region that have run out of indices help with it, so that a
  // region of fewer indices than threads (heads, say) still keeps every thread busy. Which thread
  // runs an index never changes what it computes.
  static constexpr int kSlots = 64;
  // Helpers at most (a thread count's bound far above any machine's cores), each with the flag,
  // mutex and condition variable it sleeps on.
  static constexpr int kHelperLimit = 255;
  struct alignas(64) Sleep {
    std::mutex mutex;
    std::atomic<bool> asleep{false};
    bool roused = false;  // under the mutex: woken by rouse(), not by a job
    bool woken = false;   // under the mutex: notified, and not yet back from its wait
    std::condition_variable wake;
  };
  struct alignas(64) Slot {
    std::mutex mutex;
    std::atomic<Job*> job{nullptr};  // written under the mutex; read without it only as a hint
  };

  // The calling thread's CallerTask, once: the helpers just woken take its range meanwhile.
  static void run_caller_task() {
    if (std::function<void()>* task = std::exchange(t_caller_task, nullptr)) {
      try {
        (*task)();
      } catch (...) {
      }
    }
  }

  // Whether done() held within `budget`.
  template <class Done>
  static bool spin_until(Done done, std::chrono::microseconds budget) {
    const auto end = std::chrono::steady_clock::now() + budget;
    for (;;) {
      for (int i = 0; i < 256; ++i)
        if (done()) return true;
      if (std::chrono::steady_clock::now() >= end) return false;
    }
  }

  // A helper spins between jobs only after one it was invited to (the next is likely alike), or
  // once roused; one that a job passed over sleeps until a job invites it or it is roused.
  // Spinning helpers that no call invites (a decode loop's steps use few threads) only load the
  // ticket's line the invited ones read, and slowed them.
  void helper(int id) {
    prepare_exception_state();
    t_in_parallel = true;
    t_pool_thread = id + 1;
    Sleep& sleep = sleep_[id];
    std::uint64_t seen = 0, rousing_seen = rousing_.load();
    bool invited = true, roused = false;
    // A rousing for this helper since the last one it answered (or since it joined its last job).
    const auto roused_again = [&] {
      const std::uint64_t r = rousing_.load();
      return (r >> kHelperBits) != (rousing_seen >> kHelperBits) && id < static_cast<int>(r & kMaxHelpers);
    };
    // Answers a rousing: spins kRousedSpin for the job it announces.
    const auto answer_rousing = [&] {
      rousing_seen = rousing_.load();
      g_rousings.fetch_add(1, std::memory_order_relaxed);
      roused = true;
    };
    for (;;) {
      std::uint64_t ticket = seen;
      const auto fresh = [&] { return (ticket = ticket_.load(std::memory_order_acquire)) != seen; };
      const bool spin = invited || roused;
      const auto budget = roused ? kRousedSpin : kHelperSpin;
      roused = false;
      if (!spin || !spin_until(fresh, budget)) {
        // Still spinning after a job when a call was roused (it copies its inputs in, which can
        // take longer than kHelperSpin): spins on for it rather than sleep as it comes.
        if (spin && roused_again()) {
          answer_rousing();
          continue;
        }
        bool woken_roused, rousing_came;
        {
          std::unique_lock<std::mutex> lock(sleep.mutex);
          sleep.asleep.store(true);
          sleep.wake.wait(lock, [&] {
            rousing_came = roused_again();
            return sleep.roused || rousing_came ||
                   ((ticket = ticket_.load()) != seen && id < static_cast<int>(ticket & kMaxHelpers));
          });
          sleep.asleep.store(false, std::memory_order_relaxed);
          woken_roused = std::exchange(sleep.roused, false);
          sleep.woken = false;
        }
        // Woken by a wave: goes on with it (holding no mutex: it takes the others').
        spread_wave(wave_.load() >> 32, kHelperLimit);
        if (woken_roused || rousing_came) {
          answer_rousing();
          continue;  // spins for the job (or sees the one that woke it too)
        }
      }
      seen = ticket;
      invited = id < static_cast<int>(ticket & kMaxHelpers);
      if (!invited || !join(ticket >> kHelperBits)) continue;
      rousing_seen = rousing_.load();  // a rousing before this job was for it
      work(job_, id + 1);
      help_until_done(job_);
      if (((active_.fetch_sub(1) - 1) & kJoinedMask) == 0 && caller_sleeps_.load()) {
        { std::lock_guard<std::mutex> lock(done_mutex_); }
        done_.notify_all();
      }
    }
  }

  // Joins job `sequence` if it is still open; false if the caller has closed it (or moved on).
  bool join(std::uint64_t sequence) {
    const std::uint64_t open = (sequence & 0xffffffffu) << kSequenceShift;
    std::uint64_t state = active_.load();
    while ((state & ~kJoinedMask) == open)
      if (active_.compare_exchange_weak(state, state + 1)) return true;
    return false;
  }

  // Thread `self` of the job (the caller 0, helper h h + 1) takes the indices of its own range,
  // then those left in the others'.
  void work(Job& job, int self) {
    const bool nested = t_in_parallel;
    const int share = t_share;
    const RegionShape region = t_region;
    t_in_parallel = true;
    t_share = job.share;
    t_region = job.region;
    // A recording (timeline.hpp) notes this thread's outermost indices only.
    detail::Recording* const recording = t_index_depth ? nullptr : detail::recording();
    for (int r = 0; r < job.ranges; ++r) {
      Range& range = job.range[(self + r) % job.ranges];
      for (;;) {
        // Counted in flight before it is taken: a thread that finds none in flight after every
        // range's last index was taken knows every index has finished. Once an index has thrown,
        // only those below it still run (a range's indices ascend: the rest of it is passed
        // over), so the error rethrown is the lowest index's, the one a serial loop meets.
        job.in_flight.fetch_add(1);
        const Index i = range.next++;
        if (i >= range.end || i > job.error_index.load(std::memory_order_relaxed)) {
          job.in_flight.fetch_sub(1);
          break;
        }
        const auto start = recording ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        ++t_index_depth;
        try {
          job.call(job.context, i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex_);
          if (i < job.error_index.load(std::memory_order_relaxed))
            job.error_index.store(i, std::memory_order_relaxed), job.error = std::current_exception();
        }
        --t_index_depth;
        if (recording) detail::note_index(*recording, t_pool_thread, start, std::chrono::steady_clock::now(), &job != &job_);
        job.in_flight.fetch_sub(1);
      }
    }
    t_in_parallel = nested;
    t_share = share;
    t_region = region;
  }

  // Until every index of `job` has finished: helps with the nested jobs its indices publish.
  // With none to help with for kHelperSpin, it naps between looks (at most kHelperNap): an index
  // left may run long (a causal head with no inner loops), and a thread spinning all that time
  // holds a core that the index's own thread may need (where the host shares cores).
  void help_until_done(Job& job) {
    std::chrono::steady_clock::time_point idle_since{};
    while (job.in_flight.load() > 0) {
      if (help_one()) {
        idle_since = {};
      } else if (idle_since == std::chrono::steady_clock::time_point{}) {
        idle_since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - idle_since < kHelperSpin) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(kHelperNap);
      }
    }
  }

  // Joins one published job that still has indices; false if there is none.
  bool help_one() {
    for (Slot& slot : slots_) {
      if (!slot.job.load(std::memory_order_relaxed)) continue;  // a hint: the lock below decides
      Job* job;
      {
        std::lock_guard<std::mutex> lock(slot.mutex);
        job = slot.job.load(std::memory_order_relaxed);
        if (!job || job->range->next.load() >= job->range->end) continue;
        job->joined.fetch_add(1);
      }
      work(*job, 0);
      job->joined.fetch_sub(1, std::memory_order_release);
      return true;
    }
    return false;
  }

  // pool_mutex_: starting helpers and waves, and setting a job up; done_mutex_: the caller sleeping
  // on done_.
  std::mutex pool_mutex_, done_mutex_, error_mutex_;
  std::atomic<bool> job_running_{false};  // one job at a time
  std::condition_variable done_;
  std::vector<std::thread> helpers_;  // never joined: they wait for work until the process ends
  alignas(64) std::atomic<std::uint64_t> ticket_{0};
  alignas(64) std::atomic<std::uint64_t> active_{0};
  alignas(64) std::atomic<std::uint64_t> wave_{0};
  // The last rousing, laid out as ticket_: its number, and how many helpers it was for.
  alignas(64) std::atomic<std::uint64_t> rousing_{0};
  std::atomic<bool> caller_sleeps_{false};
  Job job_;
  Range ranges_[kHelperLimit + 1];
  Slot slots_[kSlots];
  Sleep sleep_[kHelperLimit];
};

// Made on first use and never destroyed: its threads outlive main's statics.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}
#endif
}  // namespace

CallerTask::CallerTask(std::function<void()> task) : task_(std::move(task)), previous_(t_caller_task) {
  t_caller_task = task_ ? &task_ : nullptr;
}
CallerTask::~CallerTask() { t_caller_task = previous_; }

namespace detail {

#ifndef FAVOR_SERIAL_ONLY
bool pool_run(Index count, int threads, void (*call)(void*, Index), void* context) {
  return pool().run(count, threads, call, context);
}
bool pool_run_nested(Index count, void (*call)(void*, Index), void* context) {
  return pool().run_nested(count, call, context);
}
void pool_reserve(int helpers) { pool().reserve(helpers); }
void pool_rouse(int helpers, bool keep_spinning) { pool().rouse(helpers, keep_spinning); }
#endif

long long rousings() { return g_rousings.load(); }

std::vector<bool> helpers_asleep() {
#ifdef FAVOR_SERIAL_ONLY
  return {};
#else
  return pool().asleep();
#endif
}

}  // namespace detail

}  // namespace favor
