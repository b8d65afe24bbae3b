// The pthreads builds' malloc front (thread_cached_malloc.cpp).
#pragma once

namespace favor_wasm {

// Returns every block the threads' caches hold to dlmalloc (so that mallinfo counts them free).
void drain_thread_caches();

}  // namespace favor_wasm
