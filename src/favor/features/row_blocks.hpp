// Statistics of many rows (OPRF's rho, FAVOR#'s moments) summed in parallel with the same bits
// for any thread count: the rows are cut into blocks of kRowBlock, each block's partial result
// is computed on one thread, and the caller combines them in block order. A call of at most
// kRowBlock rows is one block: the same operations as one pass over all its rows.
#pragma once

#include <algorithm>
#include <vector>

#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"

namespace favor {

constexpr Index kRowBlock = 4096;

// part(row0, rows) for every block of `rows` rows, in parallel on the threads `work`
// multiply-adds are worth (at most one per block); the results in block order.
template <class Part>
auto over_row_blocks(Index rows, double work, const Part& part) {
  using Result = decltype(part(Index{0}, Index{0}));
  const Index blocks = std::max<Index>(1, (rows + kRowBlock - 1) / kRowBlock);
  std::vector<Result> results(static_cast<std::size_t>(blocks));
  const ThreadLimit limit(static_cast<int>(std::min<Index>(blocks, threads_for_work(work))));
  parallel_for(blocks, [&](Index b) {
    const Index row0 = b * kRowBlock;
    results[static_cast<std::size_t>(b)] = part(row0, std::min(kRowBlock, rows - row0));
  });
  return results;
}

}  // namespace favor
