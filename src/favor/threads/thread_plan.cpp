#include "favor/threads/thread_plan.hpp"

#include "favor/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace favor {

int threads_for_work(double multiply_adds) {
  const double wanted = std::floor(multiply_adds / kWorkPerThread);
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(max_threads())));
}

int threads_for_parts(Index parts, double work_per_part) {
  if (parts < 2 || work_per_part < kWorkPerPart) return 1;
  const int one_each = static_cast<int>(std::min<Index>(parts, max_threads()));
  return std::max(one_each, threads_for_work(static_cast<double>(parts) * work_per_part));
}

Index pieces_per_block(Index blocks, Index units, int threads, Index min_units) {
  if (blocks <= 0 || threads <= 1) return 1;
  // The fewest pieces with the least time per thread: ceil(blocks p / T) pieces of at most
  // ceil(units / p) units each (8 blocks on 12 threads: 3 pieces each, 2 rounds of a third,
  // rather than 2 of a half; 3 blocks on 2 threads: 2 each, 3 rounds of a half, rather than 2 of
  // a whole). Pieces are whole units, so 8 units in thirds take 3 per round, not 2.67.
  const Index most = std::min<Index>(threads, std::max<Index>(1, units / min_units));
  const auto cost = [&](Index p) { return (blocks * p + threads - 1) / threads * ((units + p - 1) / p); };
  Index best = 1;
  for (Index p = 2; p <= most; ++p)
    if (cost(p) < cost(best)) best = p;
  return best;
}

Index region_pieces(Index blocks, Index units, int threads, Index min_units) {
  const Index pieces = pieces_per_block(blocks, units, threads, min_units);
  if (threads <= 1 || blocks <= 0 || blocks * pieces >= kLeastRounds * threads) return pieces;
  const Index finest = std::max<Index>(1, units / std::max<Index>(1, min_units / 2));
  return std::max(pieces, std::min(finest, (kLeastRounds * threads + blocks - 1) / blocks));
}

bool indices_share_out(RegionShape region) {
  const Index threads = region.threads;
  return region.count >= kWholeIndexRounds * threads || (region.count >= 2 * threads && region.count % threads == 0);
}

Index wave_segments(int threads, RegionShape region, double segment_bytes) {
  const Index at_once = std::max<Index>(1, std::min<Index>(region.count, region.threads));
  const double fit = std::floor(kWaveBytes / static_cast<double>(at_once) / segment_bytes);
  return static_cast<Index>(std::clamp(fit, 1.0, threads == 1 ? 2.0 : 4.0 * threads));
}

FeatureBlocks plan_feature_blocks(Index segments, Index features, int threads, Index quantum) {
  const Index quanta = std::max<Index>(1, features / quantum);
  const Index blocks = pieces_per_block(std::max<Index>(1, segments), quanta, threads, 1);
  FeatureBlocks plan;
  plan.starts.push_back(0);
  // The first quanta % blocks blocks take one quantum more; the last, the features left over.
  for (Index b = 0; b < blocks; ++b)
    plan.starts.push_back(plan.starts.back() + (quanta / blocks + (b < quanta % blocks ? 1 : 0)) * quantum);
  plan.starts.back() = features;
  return plan;
}

std::pair<Index, Index> home_range(Index count, int threads, int thread) {
  if (count < threads) return {std::min<Index>(thread, count), std::min<Index>(thread + 1, count)};
  return {count * thread / threads, count * (thread + 1) / threads};
}

}  // namespace favor
