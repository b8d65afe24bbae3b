// The pthreads builds' malloc front (thread_cached_malloc.cpp); nothing to drain in the others.
#pragma once

namespace favor_wasm {

// Returns every block the threads' caches hold to dlmalloc (so that mallinfo counts them free).
#ifdef __EMSCRIPTEN_PTHREADS__
void drain_thread_caches();
#else
inline void drain_thread_caches() {}
#endif

}  // namespace favor_wasm
