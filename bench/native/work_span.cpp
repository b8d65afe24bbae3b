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
//     loop of peak_kernel.cpp when all T run it at once, against one thread alone ("together")
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// The cores under load, apart from any call: each of `threads` threads runs the register-only
// multiply-add loop (no memory traffic) at once, started together; returns their iterations per
// second, each. What a thread loses here (all-core clocks, a host that shares the cores) no split
// of a call's work can win back; what a call loses beyond it comes from memory, caches or
// hand-offs.
std::vector<double> loop_rates(int threads, int iterations) {
  std::vector<double> rates(static_cast<std::size_t>(threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<float> sink{0.0f};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const auto t0 = std::chrono::steady_clock::now();
      const float x = peak_kernel(iterations);
      const std::chrono::duration<double> s = std::chrono::steady_clock::now() - t0;
      rates[static_cast<std::size_t>(t)] = iterations / s.count();
      sink.store(x, std::memory_order_relaxed);
    });
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  return rates;
}

// For each T: the mean and the slowest thread's loop speed on T threads at once, each divided by
// one thread's alone, the medians of kTogetherRounds rounds that run one thread and T in turn (a
// host whose speed drifts moves both alike). A loop is about 0.2 s on one thread.
constexpr int kTogetherRounds = 7;
void print_together(const std::vector<int>& counts) {
  loop_rates(1, 1 << 22);  // the clocks up from idle
  const int iterations = static_cast<int>(std::min(2e9, 0.2 * loop_rates(1, 1 << 22)[0]));
  std::printf(", \"together\": [");
  for (std::size_t c = 0; c < counts.size(); ++c) {
    std::vector<double> mean, slowest;
    for (int r = 0; r < kTogetherRounds; ++r) {
      const double alone = loop_rates(1, iterations)[0];
      const std::vector<double> rates = loop_rates(counts[c], iterations);
      double sum = 0.0;
      for (const double x : rates) sum += x;
      mean.push_back(sum / static_cast<double>(rates.size()) / alone);
      slowest.push_back(*std::min_element(rates.begin(), rates.end()) / alone);
    }
    std::printf("%s{\"threads\": %d, \"perThread\": %.4g, \"slowest\": %.4g}", c ? ", " : "", counts[c], median(mean),
                median(slowest));
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
    if (cases.empty() || plans.empty()) throw std::invalid_argument("expected at least one --case");
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
  std::printf("{\"cores\": %d, \"reps\": %d, \"steps\": %ld, \"warmed\": true, \"cases\": [", cores, reps,
              static_cast<long>(kDecodeSteps));
  bool first = true;
  for (const Case& c : cases) {
    Call call(c, map);
    call.prepare();
    call();  // first-touch of the output, the allocator's pools
    std::printf("%s\n {\"id\": \"%s\", \"plans\": [", first ? "" : ",", c.id.c_str());
    first = false;
    // Each plan's fastest run, the one least disturbed by the rest of the machine; every plan in
    // turn within a rep, so that a slow spell (a shared host's, the first seconds of a process's)
    // slows a rep of every plan rather than every rep of the first.
    std::vector<favor::WorkSpan> fastest(plans.size());
    for (int r = 0; r < reps; ++r) {
      for (std::size_t p = 0; p < plans.size(); ++p) {
        call.prepare();
        favor::WorkSpan ws = favor::measure_work_span(plans[p], std::ref(call));
        if (r == 0 || ws.work < fastest[p].work) fastest[p] = std::move(ws);
      }
    }
    for (std::size_t p = 0; p < plans.size(); ++p) {
      std::printf("%s{\"threads\": %d, \"work\": %.6g, \"span\": %.6g, \"trace\": ", p ? ", " : "", plans[p],
                  fastest[p].work, fastest[p].span);
      print_trace(fastest[p].call);
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
                  "\"serial\": %.6g, \"alone\": %.6g, \"start\": %.6g, \"between\": %.6g, \"end\": %.6g, \"uninvited\": %.6g}}",
                  t ? ", " : "", timed[t], mid, median(ratio), s.regions, s.work, s.serial, s.alone, s.start, s.between, s.end,
                  s.uninvited);
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
