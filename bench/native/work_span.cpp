// For bench/work-span.mjs: calls natively (those of bench/threads.mjs, on the same inputs), their
// work, span and trace with the split they would have on T threads (src/favor/threads/work_span.hpp), and
// their time on one and on more of this machine's threads. d = dv = 64, FAVOR+ m = 256 positive
// orthogonal (seed 7). One JSON object on stdout.
//
//   work_span [--reps N] [--threads 1,2,4,8,16] [--timed 1,2,4,...] --case ID:METHOD:HEADS:L:CAUSAL[:STATE] ...
//     --threads: the splits measured (work and span); --timed: the thread counts the calls are
//     timed on (default: one and all of the machine's)
//     METHOD favor | exact | decode (400 appends of one position after a prefill of L; STATE
//     favor or exact), CAUSAL 0 | 1
//   [--together 2,4,...]: also how fast each of T threads runs the register-only multiply-add
//     loop of peak_kernel.cpp, and a loop that streams its own 8 MiB, when all T run it at once,
//     against one thread alone, and the share of their time the host took ("together"); with
//     no --case, only that
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "favor/favor.hpp"
#include "favor/threads/timeline.hpp"
#include "favor/threads/work_span.hpp"

extern "C" float peak_kernel(int iterations);  // peak_kernel.cpp

namespace {

using favor::Index;

constexpr Index kDim = 64, kFeatures = 256, kDecodeSteps = 400;
constexpr double kShortSeconds = 0.010;  // bench/threads.mjs SHORT_MS

struct Case {
  std::string id, method, state;
  Index heads = 0, length = 0;
  bool causal = false;
};

std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> parts;
  std::istringstream in(s);
  for (std::string part; std::getline(in, part, by);) parts.push_back(part);
  return parts;
}

Case parse_case(const std::string& spec) {
  const std::vector<std::string> f = split(spec, ':');
  if (f.size() < 5 || (f[1] != "favor" && f[1] != "exact" && f[1] != "decode"))
    throw std::invalid_argument("--case " + spec + ": expected ID:favor|exact|decode:HEADS:L:0|1[:favor|exact]");
  Case c{f[0], f[1], f.size() > 5 ? f[5] : "favor", std::atol(f[2].c_str()), std::atol(f[3].c_str()), f[4] == "1"};
  if (c.heads < 1 || c.length < 1) throw std::invalid_argument("--case " + spec + ": expected HEADS, L >= 1");
  return c;
}

// bench/lib/thread-cases.mjs's tensor(): uniform in [-0.6, 0.6) from a linear congruential generator.
std::vector<float> inputs(Index n, std::uint32_t seed) {
  std::vector<float> x(static_cast<std::size_t>(n));
  std::uint32_t s = seed;
  for (float& e : x) {
    s = s * 1664525u + 1013904223u;
    e = static_cast<float>(((s >> 8) / 16777216.0 - 0.5) * 1.2);
  }
  return x;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

// One case's call, on fixed inputs; for decode, kDecodeSteps appends of one position to a state
// prefilled with `length` positions (remade before each measurement, so that every one starts
// from the same length).
class Call {
 public:
  Call(const Case& c, const favor::FeatureMap& map) : c_(c), map_(map) {
    const Index n = c.heads * c.length * kDim;
    q_ = inputs(n, 1), k_ = inputs(n, 2), v_ = inputs(n, 3), out_.resize(static_cast<std::size_t>(n));
    if (c.method == "decode") step_ = inputs(c.heads * kDim, 4), step_out_.resize(static_cast<std::size_t>(c.heads * kDim));
  }

  // Before each measurement (not timed).
  void prepare() {
    if (c_.method != "decode") return;
    favor::CausalStateOptions options;
    options.method = c_.state == "exact" ? favor::StateMethod::exact : favor::StateMethod::favor;
    if (c_.state != "exact") options.map = &map_;
    state_ = std::make_unique<favor::CausalState>(options);
    state_->append(view(q_), view(k_), view(v_), out());
  }

  void operator()() {
    if (c_.method == "decode") {
      const favor::ConstTensorView x{step_.data(), {c_.heads, 1, kDim}};  // q, k and v, as in the bench
      const favor::TensorView out{step_out_.data(), {c_.heads, 1, kDim}};
      for (Index s = 0; s < kDecodeSteps; ++s) state_->append(x, x, x, out);
    } else if (c_.method == "exact") {
      favor::AttentionOptions options;
      options.causal = c_.causal;
      favor::exact_attention(view(q_), view(k_), view(v_), out(), options);
    } else {
      favor::FavorOptions options;
      options.causal = c_.causal;
      favor::favor_attention(map_, view(q_), view(k_), view(v_), out(), options);
    }
  }

 private:
  favor::ConstTensorView view(const std::vector<float>& x) const { return {x.data(), {c_.heads, c_.length, kDim}}; }
  favor::TensorView out() { return {out_.data(), {c_.heads, c_.length, kDim}}; }

  const Case& c_;
  const favor::FeatureMap& map_;
  std::vector<float> q_, k_, v_, out_, step_, step_out_;
  std::unique_ptr<favor::CausalState> state_;
};

// The cores under load, apart from any call: `threads` threads each run body(thread) at once,
// started together; returns each one's seconds.
std::vector<double> run_together(int threads, const std::function<void(int)>& body) {
  std::vector<double> seconds(static_cast<std::size_t>(threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const auto t0 = std::chrono::steady_clock::now();
      body(t);
      const std::chrono::duration<double> s = std::chrono::steady_clock::now() - t0;
      seconds[static_cast<std::size_t>(t)] = s.count();
    });
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  return seconds;
}

// Reads its own buffer over and over, a multiply-add per 4 floats read, in 12 chains: a loop
// whose speed is what the caches and memory deliver to one core. Its buffer, 4x a server core's
// 2 MiB of L2, comes from the shared cache or memory at every pass, as a large call's inputs do.
constexpr std::size_t kStreamFloats = std::size_t{2} << 20;  // 8 MiB
typedef float Float4 __attribute__((vector_size(16)));
float stream_kernel(const float* a, int passes) {
  constexpr int kChains = 12;
  Float4 x[kChains] = {};
  const Float4 b = {0.999f, 0.999f, 0.999f, 0.999f};
  for (int p = 0; p < passes; ++p)
    for (std::size_t i = 0; i + 4 * kChains <= kStreamFloats; i += 4 * kChains)
      for (int j = 0; j < kChains; ++j) {
        Float4 y;
        std::memcpy(&y, a + i + 4 * j, sizeof y);
        x[j] = x[j] * b + y;
      }
  Float4 sum = x[0];
  for (int j = 1; j < kChains; ++j) sum += x[j];
  return sum[0] + sum[1] + sum[2] + sum[3];
}

// The time the host ran something else while this guest's virtual CPUs wanted to run ("steal",
// /proc/stat, in USER_HZ ticks of 10 ms, all CPUs together); -1 where the system does not say.
long long steal_ticks() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  long long v[8] = {};
  const int n = std::fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                            &v[6], &v[7]);
  std::fclose(f);
  return n == 8 ? v[7] : -1;
}

// For each T: each thread's speed on T threads at once ÷ one thread's alone (the mean and the
// slowest thread), for the register-only multiply-add loop of peak_kernel.cpp (no memory
// traffic) and for the streaming loop, the medians of kTogetherRounds rounds that run one thread
// and T in turn (a host whose speed drifts moves both alike); and the share of the T threads'
// time the host took (steal) while they ran. What a thread loses in the register loop (all-core
// clocks, a host that shares the cores) no split of a call's work can win back; what it loses
// beyond that in the streaming loop, the shared cache and memory cost it. A loop is about
// 0.15 s on one thread.
constexpr int kTogetherRounds = 5;
void print_together(const std::vector<int>& counts) {
  const int cores = *std::max_element(counts.begin(), counts.end());
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(cores));
  for (std::size_t t = 0; t < buffers.size(); ++t) buffers[t].assign(kStreamFloats, 1.0f / static_cast<float>(t + 2));
  std::atomic<float> sink{0.0f};
  run_together(1, [&](int) { sink.store(peak_kernel(1 << 22)); });  // the clocks up from idle
  const double loop = run_together(1, [&](int) { sink.store(peak_kernel(1 << 22)); })[0];
  const double pass = run_together(1, [&](int) { sink.store(stream_kernel(buffers[0].data(), 4)); })[0] / 4;
  const int iterations = static_cast<int>(std::min(2e9, 0.15 / loop * (1 << 22)));
  const int passes = std::max(1, static_cast<int>(0.15 / pass));
  const std::function<void(int)> bodies[2] = {
      [&](int) { sink.store(peak_kernel(iterations)); },
      [&](int t) { sink.store(stream_kernel(buffers[static_cast<std::size_t>(t)].data(), passes)); }};
  std::printf(", \"together\": [");
  for (std::size_t c = 0; c < counts.size(); ++c) {
    std::vector<double> mean[2], slowest[2];
    long long stolen = 0;
    double busy = 0.0;  // the T threads' seconds, where steal was read
    for (int r = 0; r < kTogetherRounds; ++r) {
      for (int k = 0; k < 2; ++k) {
        const double alone = run_together(1, bodies[k])[0];
        const long long s0 = steal_ticks();
        const std::vector<double> seconds = run_together(counts[c], bodies[k]);
        const long long s1 = steal_ticks();
        double sum = 0.0;
        for (const double x : seconds) sum += alone / x;
        mean[k].push_back(sum / static_cast<double>(seconds.size()));
        slowest[k].push_back(alone / *std::max_element(seconds.begin(), seconds.end()));
        if (s0 >= 0 && s1 >= 0) {
          stolen += s1 - s0;
          busy += counts[c] * *std::max_element(seconds.begin(), seconds.end());
        }
      }
    }
    std::printf("%s{\"threads\": %d, \"rounds\": %d, \"perThread\": %.4g, \"slowest\": %.4g, \"streaming\": %.4g, \"streamingSlowest\": %.4g",
                c ? ", " : "", counts[c], kTogetherRounds, median(mean[0]), median(slowest[0]), median(mean[1]), median(slowest[1]));
    if (busy > 0.0) std::printf(", \"steal\": %.4g", static_cast<double>(stolen) / 100.0 / busy);
    std::printf("}");
  }
  std::printf("]");
}

// A trace as JSON, seconds: an index is [serial, region, serial, ...,
// serial], a region {"t": threads invited, "i": [index, ...]}.
void print_trace(const favor::TracedIndex& index) {
  std::printf("[%.4g", index.serial[0]);
  for (std::size_t r = 0; r < index.regions.size(); ++r) {
    const favor::TracedRegion& region = index.regions[r];
    std::printf(", {\"t\": %d, \"i\": [", region.threads);
    for (std::size_t i = 0; i < region.indices.size(); ++i) {
      if (i) std::printf(", ");
      print_trace(region.indices[i]);
    }
    std::printf("]}, %.4g", index.serial[r + 1]);
  }
  std::printf("]");
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::vector<int> plans = {1, 2, 4, 8, 16}, timed, together;
  std::vector<Case> cases;
  try {
    for (int a = 1; a < argc; a += 2) {
      const std::string flag = argv[a], value = a + 1 < argc ? argv[a + 1] : "";
      if (flag == "--reps") {
        reps = std::max(1, std::atoi(value.c_str()));
      } else if (flag == "--threads") {
        plans.clear();
        for (const std::string& t : split(value, ',')) plans.push_back(std::max(1, std::atoi(t.c_str())));
      } else if (flag == "--timed") {
        for (const std::string& t : split(value, ',')) timed.push_back(std::max(1, std::atoi(t.c_str())));
      } else if (flag == "--together") {
        for (const std::string& t : split(value, ',')) together.push_back(std::max(1, std::atoi(t.c_str())));
      } else if (flag == "--case") {
        cases.push_back(parse_case(value));
      } else {
        throw std::invalid_argument("unknown flag " + flag);
      }
    }
    if ((cases.empty() && together.empty()) || plans.empty()) throw std::invalid_argument("expected at least one --case or --together");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "work_span: %s\n", e.what());
    return 2;
  }
#ifdef __GLIBC__
  // glibc maps blocks of 128 KiB and more (a key chunk's features) anew at each call and unmaps
  // them when freed, which wasm's allocator never does (its heap only grows): from the heap, the
  // native calls allocate as the wasm build does.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (timed.empty()) timed.push_back(cores);
  timed.erase(std::remove(timed.begin(), timed.end(), 1), timed.end());
  timed.insert(timed.begin(), 1);  // the speed-ups are over one thread
  const favor::FeatureMap map(favor::Kernel::positive,
                              favor::sample_projection(kFeatures, kDim, favor::Sampling::orthogonal, 7));
  std::printf("{\"cores\": %d, \"reps\": %d, \"steps\": %ld, \"warmed\": true, \"least\": true, \"cases\": [", cores, reps,
              static_cast<long>(kDecodeSteps));
  bool first = true;
  for (const Case& c : cases) {
    Call call(c, map);
    call.prepare();
    call();  // first-touch of the output, the allocator's pools
    std::printf("%s\n {\"id\": \"%s\", \"plans\": [", first ? "" : ",", c.id.c_str());
    first = false;
    // Each plan's steps at their least time over the reps, each as little disturbed by the rest of
    // the machine as it was in any rep; every plan in turn within a rep, so that a slow spell (a
    // shared host's, the first seconds of a process's) slows a rep of every plan rather than every
    // rep of the first.
    std::vector<std::vector<favor::WorkSpan>> runs(plans.size());
    for (int r = 0; r < reps; ++r) {
      for (std::size_t p = 0; p < plans.size(); ++p) {
        call.prepare();
        runs[p].push_back(favor::measure_work_span(plans[p], std::ref(call)));
      }
    }
    for (std::size_t p = 0; p < plans.size(); ++p) {
      const favor::WorkSpan least = favor::least_per_step(runs[p]);
      runs[p].clear();
      std::printf("%s{\"threads\": %d, \"work\": %.6g, \"span\": %.6g, \"trace\": ", p ? ", " : "", plans[p],
                  least.work, least.span);
      print_trace(least.call);
      std::printf("}");
    }
    // Each thread count in turn within a rep, so that a machine whose speed drifts (a shared
    // host) moves them alike; the speed-up is the median of the reps' ratios. Each call's thread
    // time is recorded too (two clock reads an index), and the median rep's is reported. As in the
    // thread bench, a call under kShortSeconds on one thread is made once untimed right before
    // each timed one on more: the helpers, asleep since the count before, are then awake.
    std::vector<std::vector<double>> seconds(timed.size());
    std::vector<std::vector<favor::ThreadTime>> spent(timed.size());
    bool short_call = false;
    for (int r = -1; r < reps; ++r) {  // rep -1: a warm-up at each count
      for (std::size_t t = 0; t < timed.size(); ++t) {
        favor::set_max_threads(timed[t]);
        if (short_call && timed[t] > 1) call.prepare(), call();
        call.prepare();
        const favor::ThreadTime time = favor::record_thread_time(std::ref(call));
        if (r == -1 && timed[t] == 1) short_call = time.wall < kShortSeconds;
        if (r >= 0) seconds[t].push_back(time.wall), spent[t].push_back(time);
      }
    }
    std::printf("], \"timed\": [");
    for (std::size_t t = 0; t < timed.size(); ++t) {
      std::vector<double> ratio;
      for (int r = 0; r < reps; ++r) ratio.push_back(seconds[0][r] / seconds[t][r]);
      const double mid = median(seconds[t]);
      const favor::ThreadTime& s = *std::find_if(spent[t].begin(), spent[t].end(), [&](const favor::ThreadTime& x) { return x.wall == mid; });
      std::printf("%s{\"threads\": %d, \"seconds\": %.6g, \"speedup\": %.4g, \"regions\": %d, \"spent\": {\"work\": %.6g, "
                  "\"serial\": %.6g, \"alone\": %.6g, \"start\": %.6g, \"between\": %.6g, \"end\": %.6g, \"uninvited\": %.6g, "
                  "\"slowestIndex\": %.4g, \"callerIndex\": %.4g}}",
                  t ? ", " : "", timed[t], mid, median(ratio), s.regions, s.work, s.serial, s.alone, s.start, s.between, s.end,
                  s.uninvited, s.slowest_index, s.caller_index);
    }
    favor::set_max_threads(1);
    std::printf("]}");
    std::fflush(stdout);
  }
  std::printf("\n]");
  if (!together.empty()) print_together(together);
  std::printf("}\n");
  return 0;
}
