// favor-attention: exact softmax attention and its random-feature approximations.
#pragma once

#include "causal_state.hpp"
#include "codebook.hpp"
#include "error.hpp"
#include "exact_attention.hpp"
#include "feature_map.hpp"
#include "linear_attention.hpp"
#include "metrics.hpp"
#include "parallel.hpp"
#include "projection.hpp"
#include "matmul.hpp"
#include "tensor.hpp"
#include "types.hpp"
