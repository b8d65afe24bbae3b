// Native driver for bench/run.mjs: a long-lived process that reads one command per line on
// stdin and answers one line on stdout, so that native calls are timed side by side with the
// wasm peers in the same run (interleaved repetitions).
//
//   info                                     -> "ok <compiler flags> | eigen: <SIMD sets>"
//   load <file> <L> <S> <d> <dv> <m>         -> "ok"   file: raw float32 q (L*d), k (S*d), v (S*dv), w (m*d)
//   run <exact|favor> <0|1 causal> <reps>    -> "ok <ms> <ms> ..."   one timed call per rep
//   dump <exact|favor> <0|1 causal> <file>   -> "ok"   writes the output (L*dv float32)
//   threads <n>                              -> "ok"   threads for later calls (default 1)
//   peak <iterations>                        -> "ok <seconds> <flops>"  the ceiling loop (peak_kernel.cpp)
//   quit
// Errors answer "error <message>". Calls go through the same tensor API as the wasm bindings
// (favor::exact_attention / favor::favor_attention on ConstTensorView), default scale 1/sqrt(d),
// FAVOR+ with the positive kernel, the explicit projection w and the default chunk (128).
#include <Eigen/Core>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "favor/favor.hpp"

#ifndef FAVOR_BENCH_FLAGS
#define FAVOR_BENCH_FLAGS ""
#endif

extern "C" float peak_kernel(int iterations);
extern "C" int peak_kernel_flops_per_iteration();

namespace {

struct Inputs {
  favor::Index L = 0, S = 0, d = 0, dv = 0, m = 0;
  std::vector<float> q, k, v, out;
  std::unique_ptr<favor::FeatureMap> map;
};

void load(Inputs& in, const std::string& path, favor::Index L, favor::Index S, favor::Index d,
          favor::Index dv, favor::Index m) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot open " + path);
  auto read = [&](std::vector<float>& x, favor::Index n) {
    x.resize(static_cast<size_t>(n));
    file.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(n * sizeof(float)));
    if (!file) throw std::runtime_error("short file " + path);
  };
  in.L = L, in.S = S, in.d = d, in.dv = dv, in.m = m;
  read(in.q, L * d);
  read(in.k, S * d);
  read(in.v, S * dv);
  std::vector<float> w;
  read(w, m * d);
  favor::Matrix projection = Eigen::Map<favor::Matrix>(w.data(), m, d);
  in.map = std::make_unique<favor::FeatureMap>(favor::Kernel::positive, std::move(projection));
  in.out.assign(static_cast<size_t>(L * dv), 0.0f);
}

void compute(Inputs& in, const std::string& method, bool causal) {
  if (in.L == 0) throw std::runtime_error("nothing loaded");
  const favor::ConstTensorView q{in.q.data(), {in.L, in.d}}, k{in.k.data(), {in.S, in.d}},
      v{in.v.data(), {in.S, in.dv}};
  const favor::TensorView out{in.out.data(), {in.L, in.dv}};
  if (method == "exact") {
    favor::AttentionOptions o;
    o.causal = causal;
    favor::exact_attention(q, k, v, out, o);
  } else if (method == "favor") {
    favor::FavorOptions o;
    o.causal = causal;
    favor::favor_attention(*in.map, q, k, v, out, o);
  } else {
    throw std::runtime_error("unknown method " + method);
  }
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  Inputs in;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream args(line);
    std::string cmd;
    args >> cmd;
    std::ostringstream reply;
    try {
      if (cmd == "quit") break;
      if (cmd == "info") {
        reply << "ok " << FAVOR_BENCH_FLAGS << " | eigen: " << Eigen::SimdInstructionSetsInUse();
      } else if (cmd == "load") {
        std::string path;
        favor::Index L, S, d, dv, m;
        if (!(args >> path >> L >> S >> d >> dv >> m)) throw std::runtime_error("usage: load file L S d dv m");
        load(in, path, L, S, d, dv, m);
        reply << "ok";
      } else if (cmd == "run") {
        std::string method;
        int causal = 0, reps = 1;
        if (!(args >> method >> causal >> reps)) throw std::runtime_error("usage: run method causal reps");
        reply << "ok";
        for (int r = 0; r < reps; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          compute(in, method, causal != 0);
          const auto t1 = std::chrono::steady_clock::now();
          reply << ' ' << std::chrono::duration<double, std::milli>(t1 - t0).count();
        }
      } else if (cmd == "threads") {
        int threads = 1;
        if (!(args >> threads)) throw std::runtime_error("usage: threads n");
        favor::set_max_threads(threads);
        reply << "ok";
      } else if (cmd == "peak") {
        int iterations = 0;
        if (!(args >> iterations) || iterations <= 0) throw std::runtime_error("usage: peak iterations");
        const auto t0 = std::chrono::steady_clock::now();
        volatile float sink = peak_kernel(iterations);
        (void)sink;
        const auto t1 = std::chrono::steady_clock::now();
        reply << "ok " << std::chrono::duration<double>(t1 - t0).count() << ' '
              << static_cast<double>(iterations) * peak_kernel_flops_per_iteration();
      } else if (cmd == "dump") {
        std::string method, path;
        int causal = 0;
        if (!(args >> method >> causal >> path)) throw std::runtime_error("usage: dump method causal file");
        compute(in, method, causal != 0);
        std::ofstream file(path, std::ios::binary);
        file.write(reinterpret_cast<const char*>(in.out.data()),
                   static_cast<std::streamsize>(in.out.size() * sizeof(float)));
        if (!file) throw std::runtime_error("cannot write " + path);
        reply << "ok";
      } else {
        throw std::runtime_error("unknown command '" + cmd + "'");
      }
    } catch (const std::exception& e) {
      reply.str("");
      reply << "error " << e.what();
    }
    std::cout << reply.str() << std::endl;
  }
  return 0;
}
