// decoder → metrics: quality and timing figures computed from generations and
// timings. Pure functions of their inputs, so tests can feed hand-made data.
#pragma once
#include <cstdint>
#include <vector>

namespace zl {

// Share of 4-grams of each generation that already occurred earlier in the
// same generation, pooled over generations (docs/design.md#metrics-and-cost repetition_rate).
double repetition_rate(const std::vector<std::vector<int32_t>>& generations, int n = 4);

// distinct-n (Li et al., NAACL 2016, §4.1): the distinct n-grams of all
// generations pooled, divided by the tokens generated. It moves with the
// sampling temperature where repetition_rate (near 0 at this scale) does not.
double distinct_n(const std::vector<std::vector<int32_t>>& generations, int n = 2);

// Linear-interpolated percentile q in [0,100] (numpy's default); NaN for no
// data; std::invalid_argument for q outside [0,100].
double percentile(std::vector<double> values, double q);
// The same of values already sorted ascending (several percentiles of one
// set: sort it once).
double percentile_of_sorted(const std::vector<double>& sorted, double q);
double mean(const std::vector<double>& values);

// Bits per byte from a mean loss in nats per token and the stream's
// tokens-per-byte ratio.
double bits_per_byte(double loss_nats_per_token, int64_t tokens, int64_t bytes);

// Cross-entropy (nats per token) of a unigram model fitted on `train` with
// add-one smoothing, evaluated on `val`: the floor a trained model must beat.
double unigram_loss(const std::vector<int32_t>& train, const std::vector<int32_t>& val, int64_t vocab);

}  // namespace zl
