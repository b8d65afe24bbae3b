// malloc and free for the pthreads wasm builds: a small per-thread cache of freed blocks in front
// of Emscripten's dlmalloc.
//
// Why: dlmalloc serves every thread under one pthread mutex, and a thread that finds it taken
// sleeps on a futex for tens of microseconds. A decode step allocates ~20 small temporaries per
// head; with the heads of a step on two threads, they met on that mutex so often that two
// threads decoded no faster than one. Blocks freed here go to the freeing thread's cache and
// serve its next malloc of their size class without the mutex.
//
// The blocks are dlmalloc's own (sizes rounded up to powers of two, from 16 bytes to 4 KiB): any
// of them may be passed to realloc, malloc_usable_size or free from any thread, and free takes
// blocks from calloc, realloc or memalign too (classed by their usable size, rounded down). Only
// small blocks: a decode step's temporaries are, and rounding larger ones up cost memory (Eigen
// asks for a power of two plus 16 bytes: with classes up to 64 KiB, FAVOR+ at L = 2^20 on 2
// threads peaked at 1223 MiB of heap instead of 1127), while calls that allocate large blocks do
// enough work between allocations not to queue on the lock. What a cache holds is bounded
// (kClassBytes a class and thread) and counts as free: heap_used() drains every cache into
// dlmalloc before it reads mallinfo.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "thread_cached_malloc.hpp"

extern "C" {
// dlmalloc's entry points under the names Emscripten also gives them (malloc and free themselves
// are weak aliases, replaced below).
void* __libc_malloc(std::size_t);
void __libc_free(void*);
std::size_t malloc_usable_size(void*);
}

namespace {

constexpr int kMinClass = 4, kMaxClass = 12;  // 16 B .. 4 KiB
// What a cache keeps of each class. Per class, not in total: blocks that reach free without
// passing through malloc's cache (memalign'd outputs, calloc, realloc) must not crowd out the
// classes a thread's own mallocs reuse. With one bound for all (256 KiB), a decode loop's 4 KiB
// outputs (one a call, aligned_alloc'd) filled it within 64 calls; from then on every free went
// to dlmalloc and every malloc missed: ~25 of each a step and thread at 16 heads on 2 threads,
// through dlmalloc's lock and lines the other thread had written, and the heads' work took 1.5x
// as long as on one thread alone.
constexpr std::size_t kClassBytes = std::size_t{1} << 15;

int floor_log2(std::size_t n) { return 31 - __builtin_clz(static_cast<unsigned>(n)); }
int ceil_log2(std::size_t n) { return n <= 1 ? 0 : 32 - __builtin_clz(static_cast<unsigned>(n - 1)); }

// One thread's cache: a list of free blocks per class, linked through their first word. Locked by
// its thread on every use (never contended but by heap_used's drain, which is rare).
struct alignas(64) Cache {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  void* head[kMaxClass + 1] = {};
  std::size_t bytes[kMaxClass + 1] = {};

  void lock() {
    while (busy.test_and_set(std::memory_order_acquire)) {
    }
  }
  void unlock() { busy.clear(std::memory_order_release); }
  void drain() {
    for (void*& block : head)
      while (block) {
        void* next_block = *static_cast<void**>(block);
        __libc_free(block);
        block = next_block;
      }
    for (std::size_t& b : bytes) b = 0;
  }
};

// The caches live in static memory, a thread holding only its slot: a thread's cache outlives the
// thread (in browsers, ending the workers frees their thread-local memory, and the drain still
// reads their caches). Threads beyond kSlots go straight to dlmalloc.
constexpr int kSlots = 64;
Cache g_caches[kSlots];
std::atomic<int> g_slots{0};
thread_local int t_slot = -1;  // -1: not assigned yet

Cache* this_thread_cache() {
  if (t_slot < 0) t_slot = std::min(g_slots.fetch_add(1), kSlots);
  return t_slot < kSlots ? &g_caches[t_slot] : nullptr;
}

}  // namespace

extern "C" void* malloc(std::size_t n) {
  const int c = n <= (std::size_t{1} << kMaxClass) ? ceil_log2(n < 16 ? 16 : n) : -1;
  if (c < 0) return __libc_malloc(n);
  Cache* cache = this_thread_cache();
  if (!cache) return __libc_malloc(n);
  cache->lock();
  void* block = cache->head[c];
  if (block) {
    cache->head[c] = *static_cast<void**>(block);
    cache->bytes[c] -= std::size_t{1} << c;
  }
  cache->unlock();
  return block ? block : __libc_malloc(std::size_t{1} << c);
}

extern "C" void free(void* block) {
  if (!block) return;
  const std::size_t usable = malloc_usable_size(block);
  if (usable >= (std::size_t{1} << kMinClass) && usable < (std::size_t{2} << kMaxClass)) {
    const int c = floor_log2(usable);
    const std::size_t size = std::size_t{1} << c;
    if (Cache* cache = this_thread_cache()) {
      cache->lock();
      const bool kept = cache->bytes[c] + size <= kClassBytes;
      if (kept) {
        *static_cast<void**>(block) = cache->head[c];
        cache->head[c] = block;
        cache->bytes[c] += size;
      }
      cache->unlock();
      if (kept) return;
    }
  }
  __libc_free(block);
}

namespace favor_wasm {

void drain_thread_caches() {
  for (int i = 0, used = std::min(g_slots.load(), kSlots); i < used; ++i) {
    g_caches[i].lock();
    g_caches[i].drain();
    g_caches[i].unlock();
  }
}

}  // namespace favor_wasm
