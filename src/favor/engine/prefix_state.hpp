// The prefix state of linear attention and the engine's operations on it: keys folded in chunk
// by chunk at a running per-feature shift, states merged in order, queries read out.
#pragma once

#include <optional>
#include <vector>

#include "favor/features/factored.hpp"
#include "favor/types.hpp"

namespace favor {

// The prefix state of causal linear attention (docs/design.md §5, §8): sum_j phi(k_j) v_j^T (M x dv)
// and sum_j phi(k_j) (M) over the keys so far, each feature at the shift its terms were summed at
// (-inf: nothing summed yet). Appending keys rescales the old sums by exp(old shift - new shift)
// where a shift grows, as the chunks of one causal call do.
struct PrefixState {
  Matrix kv;
  Vector k_sum;
  Vector shift;
  // A carried state's last decode keys, not yet in kv (k_sum has them): kv stands for
  // kv + pending_kf^T pending_v, added by the next step's readout in the same pass over kv
  // (StateStep::readout), which saves one of the step's two passes over it, or by settle().
  // Either way the same operations as accumulate's: the same bits.
  Matrix pending_kf, pending_v;
};
PrefixState empty_prefix_state(Index features, Index dv);

// A state's sums read where they lie: a PrefixState's (its pending keys aside), or one of the
// states a causal wave keeps per chunk in one block per segment (causal_sweep.cpp).
struct PrefixView {
  Eigen::Map<const Matrix> kv;
  Eigen::Map<const Vector> k_sum, shift;
  PrefixView(const PrefixState& s)  // NOLINT: a state is read as its view wherever one is taken
      : kv(s.kv.data(), s.kv.rows(), s.kv.cols()), k_sum(s.k_sum.data(), s.k_sum.size()),
        shift(s.shift.data(), s.shift.size()) {}
  PrefixView(const float* kv, const float* k_sum, const float* shift, Index features, Index dv)
      : kv(kv, features, dv), k_sum(k_sum, features), shift(shift, features) {}
};

// Adds the pending keys to kv.
void settle(PrefixState& state);

// The per-feature max of two shifts (a state's and a chunk's column max, or two states').
Vector joined_shift(Eigen::Ref<const Vector> a, Eigen::Ref<const Vector> b);

// The state's sums moved to a per-feature shift at or above its own (factors exp(old - new) <= 1).
void rescale_state(PrefixState& state, const Vector& shift);
// A causal call continuing a carried prefix state (a causal state's append, one per key/value
// head). The carried state changes for good only at commit(), once every head of the append has
// succeeded; rollback() leaves it as it was (its pending keys possibly added: the same state).
// A decode step (one chunk at most, keys in the usual range: causal_sweep.cpp) works in place, so
// that no M x dv copy of the state is made per token: it rescales the rows whose shift grows
// (keeping their old values for rollback), reads the state out while adding the previous step's
// pending keys, and leaves its own keys pending at commit(). Otherwise the new state is built
// whole beside the carried one, which is only read, and replaces it at commit().
class StateStep {
 public:
  explicit StateStep(PrefixState& carried) : carried_(&carried) {}
  // The carried state, its pending keys added.
  const PrefixState& carried();
  const Vector& carried_shift() const { return carried_->shift; }
  // In place: the carried state moved to `shift` (at or above its own) now.
  void rescale_in_place(Vector shift);
  // readout() of the state in place; a single query row's first readout adds the pending keys
  // in the same pass (the bits of settle() then readout()).
  void readout(const Matrix& qf, Matrix& numerator, float* denominator);
  // In place: the keys kf (with values vs) pending at commit (k_sum has them then).
  void accumulate_at_commit(Matrix kf, ConstMatrixRef vs);
  // The whole new state.
  void replace_with(PrefixState next);
  void commit();
  void rollback();

 private:
  void add_pending();  // to the rows not rescaled, unless readout did
  void finish();

  PrefixState* carried_;
  Vector old_shift_;              // size 0: nothing rescaled in place
  std::vector<Index> rescaled_;   // the rows rescaled in place (ascending; their pending keys added),
  std::vector<float> old_rows_;   // their old kv rows (without the pending keys) and k_sum, dv + 1 floats each
  bool pending_added_ = false;    // readout added the pending keys to the other rows
  Matrix kf_, v_;                 // what accumulate_at_commit adds
  std::optional<PrefixState> next_;
};

// out = a + b, at the larger of the two shifts per feature and `floor` (out may be a).
void merge_into(PrefixView a, PrefixView b, PrefixState& out, const Vector* floor = nullptr);
void merge(PrefixState& into, const PrefixState& from);
// The state of the keys of all `parts` (at least one, pending keys included), at the largest of
// their shifts per feature: one pass over each, no copies (a sliding window's new state from its
// blocks' sums, windowed_state.cpp).
PrefixState summed_states(const std::vector<const PrefixState*>& parts);

// numerator = qf kv, denominator = qf k_sum: the readout of a state.
void readout(const Matrix& qf, const PrefixState& state, Matrix& numerator, float* denominator);
// Rows [i0, i0 + n) of out: numerator / denominator, row by row (guarded, see guard). Returns
// whether every value written is finite.
bool write_rows(MatrixRef out, Index i0, const Matrix& numerator, const Vector& denominator, Index n);
// kv += kf^T vs, k_sum += the column sums of kf, both over the chunk's rows in order.
void accumulate(PrefixState& state, const Matrix& kf, ConstMatrixRef vs);

// A chunk of keys as the fold takes it: log magnitudes (no shift yet), their column max, and
// the kernel's values. Chunks are independent of each other: they can be made in parallel.
struct KeyChunk {
  Matrix log, value;
  Vector column_max;
};
KeyChunk key_chunk(const FactorBlock& keys, Index features, Index j0, Index n);

// Folds with more threads than segments cut the features into blocks folded in parallel: every
// step of a fold acts on each feature alone (its shift, its rescale, its exponentials, its sums
// over the chunk's rows in order), so a block of features folded alone gets the bits of the whole
// fold. Blocks are a multiple of this many features: they then start on whole vectors, so that
// each feature's exponentials and sums run the same instructions as in the whole row.
constexpr Index kFeatureQuantum = 16;
// Features [r0, r0 + F) of a chunk.
KeyChunk key_columns(const KeyChunk& whole, Index r0, Index F);
// The same of a chunk made in pieces of consecutive rows (its rows in order, its column max the
// pieces' max): a key's log magnitudes and values depend on its row alone, so these are the bits
// of the chunk made whole.
KeyChunk key_columns(const std::vector<KeyChunk>& pieces, Index r0, Index F);

// Rows [r0, r0 + F) of `into` (sized for every feature) set to `block`'s.
void set_feature_rows(PrefixState& into, const PrefixState& block, Index r0);

// A chunk's key features at the fold's running shift: the state's shift joined with the chunk's
// column max (`shift`, set here). `log` is consumed.
Matrix fold_features(const PrefixState& state, Matrix log, const KeyChunk& k, Vector& shift);
// Adds a chunk's features (from fold_features, at `shift`) to the state.
void fold_into(PrefixState& state, const Matrix& kf, const Vector& shift, ConstMatrixRef vs);
// Both: adds a chunk of keys (log magnitudes `log`, consumed) to the state at its running shift;
// returns the chunk's features at the state's new shift.
Matrix fold_chunk(PrefixState& state, Matrix log, const KeyChunk& k, ConstMatrixRef vs);

// max |x(i, j)| over rows [begin, end) (0 for none).
float max_abs_rows(ConstMatrixRef x, Index begin, Index end);

// The state of keys [begin, end), chunk by chunk at running shifts. v_top (or null): raised to
// the max |v| over those rows, read as each chunk is folded.
PrefixState fold_keys(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index begin, Index end,
                      float* v_top = nullptr);
// The same in segments of `segment` rows folded in parallel, merged in order into `into`: the
// same bits for any thread count.
void fold_range(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index segment,
                Index begin, Index end, PrefixState& into, float* v_top = nullptr);

}  // namespace favor
