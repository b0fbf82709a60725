#include "models/sequence.hpp"

#include <algorithm>
#include <cmath>

namespace pipeplan {

namespace {

// Draws per batch a length-grouped sampler may spend finding same-bucket samples before it takes the bucket's
// nearest length (a bucket almost no sample falls in; keeps a batch's cost bounded).
constexpr int kBucketTriesPerSample = 1000;

double truncated(const SequenceConfig& seq, double tokens) {
  return seq.max_tokens > 0 ? std::min(tokens, static_cast<double>(seq.max_tokens)) : tokens;
}

// The bucket (index into the boundaries; boundaries.size() for the open last one) a length falls in.
std::size_t bucket_of(const std::vector<std::int64_t>& boundaries, double tokens) {
  return static_cast<std::size_t>(
      std::lower_bound(boundaries.begin(), boundaries.end(), tokens,
                       [](std::int64_t b, double t) { return static_cast<double>(b) < t; }) -
      boundaries.begin());
}

// The bucket's nearest length to `tokens` (the fallback when rejection sampling gives up).
double clamp_to_bucket(const std::vector<std::int64_t>& boundaries, std::size_t k, double tokens) {
  const double lo = k == 0 ? 1.0 : static_cast<double>(boundaries[k - 1] + 1);
  const double hi = k < boundaries.size() ? static_cast<double>(boundaries[k]) : tokens;
  return std::clamp(tokens, lo, std::max(lo, hi));
}

}  // namespace

const char* to_string(SequenceCollate c) {
  switch (c) {
    case SequenceCollate::kPadToLongest: return "pad_to_longest";
    case SequenceCollate::kPadToMax: return "pad_to_max";
    case SequenceCollate::kBucket: return "bucket";
    case SequenceCollate::kPack: return "pack";
  }
  return "?";
}

double sequence_step_s(double fixed_step_s, const SequenceConfig& seq, const BatchShape& shape) {
  return std::max(seq.step_s_floor, fixed_step_s + seq.step_s_per_token * shape.slots +
                                        seq.step_s_per_token_squared * shape.row_tokens_squared);
}

double padded_row_length(const SequenceConfig& seq, double longest_tokens) {
  if (seq.collate == SequenceCollate::kPadToMax || seq.collate == SequenceCollate::kPack)
    return static_cast<double>(seq.max_tokens);
  if (seq.pad_to_multiple_of <= 1) return longest_tokens;
  const double m = static_cast<double>(seq.pad_to_multiple_of);
  return std::ceil(longest_tokens / m) * m;
}

LengthPool::LengthPool(const SequenceConfig& seq)
    : tokens_(&seq.histogram_tokens), cumulative_(&seq.histogram_cumulative) {
  while (top_bit_ * 2 <= tokens_->size()) top_bit_ *= 2;
  refill();
}

void LengthPool::refill() {
  // O(bins) build: each node adds itself to its parent
  const std::size_t bins = tokens_->size();
  tree_.assign(bins + 1, 0.0);
  for (std::size_t i = 1; i <= bins; ++i) {
    tree_[i] += (*cumulative_)[i - 1] - (i > 1 ? (*cumulative_)[i - 2] : 0.0);
    const std::size_t parent = i + (i & (~i + 1));
    if (parent <= bins) tree_[parent] += tree_[i];
  }
  remaining_ = bins > 0 ? cumulative_->back() : 0.0;
}

std::size_t LengthPool::pick(Rng& rng) {
  if (remaining_ < 0.5) refill();
  // the line of rank floor(u x remaining) in bin order: descend the tree to the last prefix <= it
  double target = std::floor(rng.uniform01() * remaining_);
  std::size_t at = 0;
  for (std::size_t step = top_bit_; step > 0; step /= 2) {
    const std::size_t next = at + step;
    if (next <= tokens_->size() && tree_[next] <= target) {
      at = next;
      target -= tree_[next];
    }
  }
  return std::min(at, tokens_->size() - 1);  // at lines lie before bin `at` (0-based), so the line is in it
}

void LengthPool::take(std::size_t bin) {
  for (std::size_t i = bin + 1; i <= tokens_->size(); i += i & (~i + 1)) tree_[i] -= 1.0;
  remaining_ -= 1.0;
}

std::int64_t padded_length_count(const SequenceConfig& seq) {
  if (seq.collate == SequenceCollate::kPadToMax || seq.collate == SequenceCollate::kPack) return 1;
  if (!seq.histogram_tokens.empty()) return static_cast<std::int64_t>(padded_lengths(seq).size());
  if (seq.max_tokens <= 0) return 0;
  const std::int64_t m = std::max<std::int64_t>(1, seq.pad_to_multiple_of);
  return (seq.max_tokens + m - 1) / m;
}

std::vector<double> padded_lengths(const SequenceConfig& seq) {
  std::vector<double> out;
  if (seq.collate == SequenceCollate::kPadToMax || seq.collate == SequenceCollate::kPack) {
    out.push_back(static_cast<double>(seq.max_tokens));
  } else if (!seq.histogram_tokens.empty()) {
    for (double tokens : seq.histogram_tokens) {  // increasing, so the padded lengths are too
      const double padded = padded_row_length(seq, truncated(seq, tokens));
      if (out.empty() || padded != out.back()) out.push_back(padded);
    }
  } else {
    // a law cut at max_tokens: every multiple of pad_to_multiple_of (1: every length) up to the one max_tokens pads to
    const std::int64_t m = std::max<std::int64_t>(1, seq.pad_to_multiple_of);
    for (std::int64_t k = 1; k <= padded_length_count(seq); ++k) out.push_back(static_cast<double>(k * m));
  }
  return out;
}

bool warm_up_possible(const SequenceConfig& seq) {
  const std::int64_t lengths = padded_length_count(seq);
  return lengths > 0 && lengths <= kMaxWarmUpLengths && seq.batch_tokens == 0;
}

double draw_sample_tokens(const SequenceConfig& seq, Rng& rng, LengthPool* pool) {
  if (pool != nullptr) {
    const std::size_t bin = pool->pick(rng);
    pool->take(bin);
    return pool->tokens(bin);
  }
  if (!seq.histogram_tokens.empty()) {
    const double u = rng.uniform01() * seq.histogram_cumulative.back();
    const auto it = std::upper_bound(seq.histogram_cumulative.begin(), seq.histogram_cumulative.end(), u);
    const auto i = std::min<std::size_t>(static_cast<std::size_t>(it - seq.histogram_cumulative.begin()),
                                         seq.histogram_tokens.size() - 1);
    return seq.histogram_tokens[i];
  }
  return std::max(1.0, std::round(sample(seq.tokens_per_sample, rng)));
}

BatchShape draw_batch_shape(const SequenceConfig& seq, int loader_batch, Rng& rng, LengthPool* pool) {
  BatchShape b;
  if (seq.collate == SequenceCollate::kPack) {
    const double row = static_cast<double>(seq.max_tokens);
    const double positions = loader_batch * row;
    double drawn = 0.0;
    while (drawn < positions) {
      drawn += draw_sample_tokens(seq, rng, pool);
      ++b.samples;
    }
    b.load_tokens = drawn;
    b.tokens = b.slots = positions;
    b.rows = loader_batch;
    b.row_tokens_squared = loader_batch * row * row;
    b.padded_length = row;
  } else {
    double longest = 0.0;
    std::size_t bucket = 0;
    int taken = 0;
    // a candidate sample's length; with a pool it stays there until the batch takes it (a bucket's rejected
    // candidates and the sample that would overflow the token budget are left for later batches)
    std::size_t bin = 0;
    auto candidate = [&]() {
      if (pool == nullptr) return draw_sample_tokens(seq, rng);
      bin = pool->pick(rng);
      return pool->tokens(bin);
    };
    for (int i = 0; i < loader_batch; ++i) {
      double raw = candidate();
      bool from_pool = pool != nullptr;
      if (seq.collate == SequenceCollate::kBucket) {
        if (i == 0) {
          bucket = bucket_of(seq.bucket_boundaries_tokens, truncated(seq, raw));
        } else {
          int tries = 0;
          while (bucket_of(seq.bucket_boundaries_tokens, truncated(seq, raw)) != bucket && tries < kBucketTriesPerSample) {
            raw = candidate();
            ++tries;
          }
          if (bucket_of(seq.bucket_boundaries_tokens, truncated(seq, raw)) != bucket) {
            raw = clamp_to_bucket(seq.bucket_boundaries_tokens, bucket, truncated(seq, raw));
            from_pool = false;  // a stand-in length, not a line of the dataset
          }
        }
      }
      const double kept = truncated(seq, raw);
      if (seq.batch_tokens > 0 && taken > 0) {
        // the token budget: one more sample would pad the batch past it (that sample opens the next batch)
        const double row = padded_row_length(seq, std::max(longest, kept));
        if ((taken + 1) * row > static_cast<double>(seq.batch_tokens)) break;
      }
      if (from_pool) pool->take(bin);
      b.load_tokens += raw;
      b.tokens += kept;
      longest = std::max(longest, kept);
      ++taken;
    }
    b.samples = taken;
    b.rows = taken;
    const double padded = padded_row_length(seq, longest);
    b.padded_length = padded;
    b.slots = taken * padded;
    b.row_tokens_squared = taken * padded * padded;
  }
  b.bytes = b.slots * seq.bytes_per_token;
  return b;
}

int expected_shape_batches(int loader_batch, double samples_per_batch) {
  const double per_batch = std::max({1.0, static_cast<double>(loader_batch), samples_per_batch});
  return static_cast<int>(std::clamp(262144.0 / per_batch, 64.0, 4096.0));
}

BatchShape MeanBatchShape::as_batch() const {
  BatchShape b;
  b.samples = static_cast<int>(std::lround(samples));
  b.bytes = bytes;
  b.load_tokens = load_tokens;
  b.tokens = tokens;
  b.slots = slots;
  b.rows = rows;
  b.row_tokens_squared = row_tokens_squared;
  return b;
}

MeanBatchShape expected_batch_shape(const SequenceConfig& seq, int loader_batch, std::uint64_t seed, int batches,
                                    double fixed_step_s) {
  Rng rng(seed);
  MeanBatchShape sum;
  for (int i = 0; i < batches; ++i) {
    const BatchShape b = draw_batch_shape(seq, loader_batch, rng);
    sum.step_s += sequence_step_s(fixed_step_s, seq, b);
    sum.samples += b.samples;
    sum.bytes += b.bytes;
    sum.load_tokens += b.load_tokens;
    sum.tokens += b.tokens;
    sum.slots += b.slots;
    sum.rows += b.rows;
    sum.row_tokens_squared += b.row_tokens_squared;
  }
  const double n = std::max(1, batches);
  for (double* x : {&sum.samples, &sum.bytes, &sum.load_tokens, &sum.tokens, &sum.slots, &sum.rows, &sum.row_tokens_squared,
                    &sum.step_s})
    *x /= n;
  return sum;
}

}  // namespace pipeplan
