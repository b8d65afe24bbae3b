// malloc and free for the pthreads wasm builds: a small per-thread cache of freed blocks in front
// of Emscripten's dlmalloc.
//
// Why: dlmalloc serves every thread under one pthread mutex, and a thread that finds it taken
// sleeps on a futex for tens of microseconds. A decode step allocates ~20 small temporaries per
// head, and a long call's blocks of rows each allocate a few large ones (their features: rows x m
// floats); with many threads doing that at once they meet on that mutex. Blocks freed here go to
// the freeing thread's cache and serve its next malloc of their size without the mutex.
//
// Two kinds of blocks, both dlmalloc's own (any of them may be passed to realloc,
// malloc_usable_size or free from any thread, and free takes blocks from calloc, realloc or
// memalign too):
// - small ones, sizes rounded up to powers of two from 16 bytes to 4 KiB, in a list per size
//   class (kClassBytes a class);
// - large ones up to kLargeMax, not rounded (rounding them up cost memory: Eigen asks for a power
//   of two plus 16 bytes, so most would take twice their size): the few a thread freed last,
//   kLargeBytes at most, each serving a malloc of at most its size and at least 3/4 of it. A
//   block of rows allocates the same few sizes as the block before it on that thread.
// What a cache holds counts as free: heap_used() drains every cache into dlmalloc before it reads
// mallinfo.
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
// through dlmalloc's lock and lines the other thread had written, and the heads' work took half
// as long again as on one thread alone.
constexpr std::size_t kClassBytes = std::size_t{1} << 15;
// Large blocks: the most a thread keeps, in bytes and in blocks, and the largest it keeps (a block
// of 128 rows of 1,024 features).
constexpr std::size_t kLargeBytes = std::size_t{1} << 20, kLargeMax = std::size_t{1} << 19;
constexpr int kLargeBlocks = 8;

int floor_log2(std::size_t n) { return 31 - __builtin_clz(static_cast<unsigned>(n)); }
int ceil_log2(std::size_t n) { return n <= 1 ? 0 : 32 - __builtin_clz(static_cast<unsigned>(n - 1)); }

// One thread's cache: a list of free blocks per class, linked through their first word. Locked by
// its thread on every use (never contended but by heap_used's drain, which is rare).
struct alignas(64) Cache {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  void* head[kMaxClass + 1] = {};
  std::size_t bytes[kMaxClass + 1] = {};
  // Large blocks, oldest first, and their usable sizes.
  void* large[kLargeBlocks] = {};
  std::size_t large_size[kLargeBlocks] = {};
  int large_count = 0;
  std::size_t large_bytes = 0;

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
    while (large_count) __libc_free(take_large(0));
  }

  // The smallest large block that serves n bytes (nullptr if none does).
  void* best_large(std::size_t n) {
    int best = -1;
    for (int i = 0; i < large_count; ++i)
      if (large_size[i] >= n && large_size[i] - large_size[i] / 4 <= n && (best < 0 || large_size[i] < large_size[best]))
        best = i;
    return best < 0 ? nullptr : take_large(best);
  }
  void* take_large(int i) {
    void* block = large[i];
    large_bytes -= large_size[i];
    --large_count;
    for (int j = i; j < large_count; ++j) large[j] = large[j + 1], large_size[j] = large_size[j + 1];
    return block;
  }
  // Keeps a large block of `size` usable bytes; returns the blocks it no longer keeps (the oldest)
  // through `evicted` (at most kLargeBlocks), to be freed outside the lock.
  int keep_large(void* block, std::size_t size, void** evicted) {
    int count = 0;
    while (large_count && (large_count == kLargeBlocks || large_bytes + size > kLargeBytes)) evicted[count++] = take_large(0);
    large[large_count] = block, large_size[large_count] = size, ++large_count;
    large_bytes += size;
    return count;
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
  if (c < 0) {
    Cache* cache = n <= kLargeMax ? this_thread_cache() : nullptr;
    if (!cache) return __libc_malloc(n);
    cache->lock();
    void* block = cache->best_large(n);
    cache->unlock();
    return block ? block : __libc_malloc(n);
  }
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
  } else if (usable > (std::size_t{1} << kMaxClass) && usable <= kLargeMax) {
    if (Cache* cache = this_thread_cache()) {
      void* evicted[kLargeBlocks];
      cache->lock();
      const int count = cache->keep_large(block, usable, evicted);
      cache->unlock();
      for (int i = 0; i < count; ++i) __libc_free(evicted[i]);
      return;
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
