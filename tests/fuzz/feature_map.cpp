// Fuzzing feature maps.
#include "fuzz.hpp"

namespace fuzz {

// Feature maps: sizes (including huge ones), redraw, raw features, kernel estimates, OPRF.
void fuzz_feature_map(Decoder& in) {
  static const Index huge_sizes[] = {46341, 65536, 1 << 20, std::numeric_limits<int>::max(), 3, 0, -1};
  const bool huge = in.pick(4) == 0;
  const Index d = huge ? huge_sizes[in.pick(7)] : in.size(16);
  const Index m = huge ? huge_sizes[in.pick(7)] : in.size(32);
  favor::FeatureMapOptions o;
  o.dim = d;
  o.features = m;
  o.kernel = pick_kernel(in);
  o.sampling = pick_sampling(in);
  o.seed = in.p.ConsumeIntegral<std::uint64_t>();
  o.epsilon = in.pick(4) == 0 ? -1.0 : 1e-3;
  // Requests whose W alone (or its orthogonal block, min(m, d) x d in double) cannot be allocated
  // must fail fast: only sizes that would take more than ~1 GiB are "huge" here; others are
  // computed. (Counted as d x d, a W of 3 x 2^20 read as huge and was built: 8 s under ASan.)
  const double rows = static_cast<double>(std::max<Index>(m, 0)), cols = static_cast<double>(std::max<Index>(d, 0));
  const double bytes = 4.0 * rows * cols + (o.sampling == favor::Sampling::iid ? 0.0 : 8.0 * std::min(rows, cols) * cols);
  if (huge && d > 0 && m > 0 && bytes < 2e9) {
    // e.g. m = 3, d = 65536 iid: 768 KiB, fine but slow for orthogonal; keep only cheap ones
    if (o.sampling != favor::Sampling::iid || static_cast<double>(m) * static_cast<double>(d) > 4e6) return;
  }
  std::unique_ptr<favor::FeatureMap> map;
  const Outcome outcome = run("FeatureMap(options)", huge, [&] { map = std::make_unique<favor::FeatureMap>(o); });
  const bool valid = d >= 1 && m >= 1 && o.epsilon >= 0.0 &&
                     !(dense_exponential(o.kernel) && d > favor::kMaxDenseExponentialDim);
  if (outcome == Outcome::ok && !valid) fail("FeatureMap: invalid options accepted");
  if (outcome == Outcome::error && valid && bytes < 1e8) fail("FeatureMap: valid small options rejected");
  if (outcome != Outcome::ok) return;
  if (!map->projection().allFinite()) fail("FeatureMap: non-finite projection");
  if (huge) return;

  if (in.flag()) {
    const Matrix before = map->projection();
    map->redraw(o.seed);
    if (!(map->projection().array() == before.array()).all()) fail("redraw with the same seed changed W");
  }
  const Index L = in.size(), S = in.size();
  const Matrix x = in.matrix(L, d), y = in.matrix(S, d);
  trace("kernel " + std::string(favor::to_string(map->kernel())) + " epsilon " + std::to_string(map->epsilon()) + " (" + std::to_string(std::log10(map->epsilon())) + " log10)");
  trace("W", map->projection()), trace("x", x), trace("y", y);
  const bool finite = x.allFinite() && y.allFinite();
  favor::KernelParameters params;
  // FAVOR#'s parameters refuse non-finite moments (OPRF's turn NaN and fail later).
  if (run("parameters", false, [&] { params = map->parameters(x, y, 1.0); }) != Outcome::ok) {
    if (!dense_exponential(map->kernel())) fail("parameters: threw for a kernel that never does");
    if (finite && max_abs(x) <= kTame && max_abs(y) <= kTame) fail("parameters: tame inputs rejected");
    return;
  }
  if (finite && map->kernel() == favor::Kernel::oprf &&
      !(std::isfinite(params.oprf.a) && std::isfinite(params.oprf.b) && std::isfinite(params.oprf.log_d) &&
        params.oprf.a <= 0.0 && params.oprf.b >= 1.0))
    fail("oprf coefficients are not finite or out of range");
  switch (in.pick(3)) {
    case 0: {
      const Matrix phi = map->features(x, params);  // documented to overflow for large inputs
      // OPRF's coefficients come from x and y together (rho): huge keys overflow them in float32.
      // 'aderf' scales queries by Psi ~ (|y| / |x|)^(1/2): unit queries against huge keys get large raw features.
      const bool tame = max_abs(x) <= 1.0 && (map->kernel() != favor::Kernel::oprf || max_abs(y) <= kTame) &&
                        (map->kernel() != favor::Kernel::aderf || max_abs(y) <= 1.0);
      if (finite && tame && !phi.allFinite()) fail("features: non-finite for unit inputs");
      break;
    }
    case 1: {
      MatrixD est;
      if (run("kernel_estimate", false, [&] { est = favor::kernel_estimate(*map, x, y); }) != Outcome::ok) {
        if (finite && max_abs(x) <= kTame && max_abs(y) <= kTame) fail("kernel_estimate: tame inputs rejected");
        break;
      }
      trace("estimate", est);
      if (finite)
        for (Index i = 0; i < est.size(); ++i)
          if (std::isnan(est.data()[i])) fail("kernel_estimate: NaN for finite inputs");
      break;
    }
    default: {
      // Documented: every entry finite (for inputs whose float32 features do not overflow).
      const favor::StabilizedFeatures st = favor::stabilized_features(*map, x, y, params);
      if (finite && max_abs(x) <= kTame && max_abs(y) <= kTame && (!st.query.allFinite() || !st.key.allFinite()))
        fail("stabilized_features: non-finite factors");
      break;
    }
  }
}

}  // namespace fuzz
