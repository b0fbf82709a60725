// Variable-length sequences (models/sequence.hpp, the scenario's `sequence` section) against hand calculations,
// order statistics and renewal theory.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/analytic.hpp"
#include "models/input_error.hpp"
#include "models/profile.hpp"
#include "models/scenario.hpp"
#include "models/sequence.hpp"

using namespace pipeplan;
using nlohmann::json;

namespace {

SequenceConfig constant_lengths(double tokens, SequenceCollate collate, std::int64_t max_tokens = 0) {
  SequenceConfig q;
  q.enabled = true;
  q.tokens_per_sample = {tokens, 0.0, Distribution::Kind::kConstant};
  q.collate = collate;
  q.max_tokens = max_tokens;
  return q;
}

// The lognormal's CDF with mean m and coefficient of variation cv.
double lognormal_cdf(double x, double m, double cv) {
  const double s2 = std::log1p(cv * cv), mu = std::log(m) - s2 / 2;
  return x <= 0 ? 0.0 : 0.5 * std::erfc(-(std::log(x) - mu) / std::sqrt(2 * s2));
}

json lm_scenario() {
  return {{"dataset", {{"num_samples", 100000}, {"load_s_per_sample", 0.0001}}},
          {"loader", {{"batch_size", 8}, {"num_workers", 2}}},
          {"sequence", {{"tokens_per_sample", 100}, {"max_tokens", 512}, {"collate", "pad_to_max"}}},
          {"training", {{"step_s", 0.01}}}};
}

void expect_input_error(const json& j, const std::string& path_fragment) {
  Profile p;
  try {
    parse_scenario(j, "lm.json", p);
    FAIL() << "expected an InputError naming " << path_fragment;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path_fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(SequenceShape, ConstantLengthsPadToTheirOwnLength) {
  Rng rng(1);
  SequenceConfig q = constant_lengths(100, SequenceCollate::kPadToLongest);
  q.bytes_per_token = 16;  // input_ids and labels, int64
  const BatchShape b = draw_batch_shape(q, 8, rng);
  EXPECT_EQ(b.samples, 8);
  EXPECT_DOUBLE_EQ(b.tokens, 800);
  EXPECT_DOUBLE_EQ(b.slots, 800);  // no padding: every row is the longest
  EXPECT_DOUBLE_EQ(b.load_tokens, 800);
  EXPECT_DOUBLE_EQ(b.bytes, 800 * 16);
  EXPECT_DOUBLE_EQ(b.row_tokens_squared, 8 * 100.0 * 100.0);
}

TEST(SequenceShape, TruncationKeepsMaxTokensButTokenizesTheWholeSample) {
  Rng rng(1);
  const BatchShape b = draw_batch_shape(constant_lengths(3000, SequenceCollate::kPadToLongest, 2048), 4, rng);
  EXPECT_DOUBLE_EQ(b.tokens, 4 * 2048.0);
  EXPECT_DOUBLE_EQ(b.slots, 4 * 2048.0);
  EXPECT_DOUBLE_EQ(b.load_tokens, 4 * 3000.0);  // the tokenizer reads the whole text, then cuts
}

TEST(SequenceShape, PadToMaxPadsEveryRowToMaxTokens) {
  Rng rng(1);
  const BatchShape b = draw_batch_shape(constant_lengths(100, SequenceCollate::kPadToMax, 512), 8, rng);
  EXPECT_DOUBLE_EQ(b.tokens, 800);
  EXPECT_DOUBLE_EQ(b.slots, 8 * 512.0);  // 84% padding
  EXPECT_DOUBLE_EQ(b.row_tokens_squared, 8 * 512.0 * 512.0);
}

TEST(SequenceShape, PackFillsRowsAndCutsTheLastSample) {
  Rng rng(1);
  // 4 rows of 256 = 1,024 positions; samples of 100 tokens: 11 fill them (1,100), the last cut at 24 of its 100
  const BatchShape b = draw_batch_shape(constant_lengths(100, SequenceCollate::kPack, 256), 4, rng);
  EXPECT_EQ(b.samples, 11);
  EXPECT_DOUBLE_EQ(b.tokens, 1024);
  EXPECT_DOUBLE_EQ(b.slots, 1024);
  EXPECT_DOUBLE_EQ(b.load_tokens, 1100);
  EXPECT_DOUBLE_EQ(b.row_tokens_squared, 4 * 256.0 * 256.0);
}

// Padding to the longest of n independent lengths: the mean padded row is E[max] = integral of 1 - F(x)^n.
TEST(SequenceShape, PadToLongestMeanIsTheExpectedMaximum) {
  const double mean = 600, cv = 0.5;
  const int n = 16;
  SequenceConfig q = constant_lengths(mean, SequenceCollate::kPadToLongest);
  q.tokens_per_sample = {mean, cv, Distribution::Kind::kLognormal};
  double expected_max = 0.0;
  for (double x = 0.5; x < 20 * mean; x += 1.0) expected_max += 1.0 - std::pow(lognormal_cdf(x, mean, cv), n);
  const MeanBatchShape m = expected_batch_shape(q, n, 7, 4096);
  EXPECT_NEAR(m.slots / n, expected_max, 0.01 * expected_max);
  EXPECT_NEAR(m.tokens / n, mean, 0.01 * mean);  // the real tokens: the lengths' own mean (rounded to whole tokens)
}

// Packing S positions from lengths of mean mu: the samples a batch takes is a first-passage count, whose mean renewal
// theory gives as S / mu + E[L^2] / (2 mu^2) = S / mu + (1 + cv^2) / 2 for S much longer than a sample.
TEST(SequenceShape, PackSamplesPerBatchFollowsRenewalTheory) {
  const double mean = 300, cv = 0.5;
  SequenceConfig q = constant_lengths(mean, SequenceCollate::kPack, 2048);
  q.tokens_per_sample = {mean, cv, Distribution::Kind::kLognormal};
  const double positions = 8 * 2048.0;
  const MeanBatchShape m = expected_batch_shape(q, 8, 11, 4096);
  EXPECT_NEAR(m.samples, positions / mean + (1 + cv * cv) / 2, 0.3);
  EXPECT_DOUBLE_EQ(m.slots, positions);
}

// A length-grouped sampler: a batch's samples all come from its first sample's bucket, so batches fall in a bucket as
// often as samples do, and a bucket's batches hold its conditional mean length: for (100, 1000],
// E[L | 100 < L <= 1000] = ([x F(x)] from 100 to 1000 - integral of F) / (F(1000) - F(100)).
TEST(SequenceShape, BucketDrawsEachBatchFromOneBucket) {
  const double mean = 300, cv = 1.0;
  SequenceConfig q = constant_lengths(mean, SequenceCollate::kBucket);
  q.tokens_per_sample = {mean, cv, Distribution::Kind::kLognormal};
  q.bucket_boundaries_tokens = {100, 1000};
  const double f_lo = lognormal_cdf(100.5, mean, cv), f_hi = lognormal_cdf(1000.5, mean, cv);  // whole tokens
  double integral = 0.0;
  for (double x = 100.5; x < 1000.5; x += 0.5) integral += 0.5 * lognormal_cdf(x + 0.25, mean, cv);
  const double conditional_mean = (1000.5 * f_hi - 100.5 * f_lo - integral) / (f_hi - f_lo);
  Rng rng(3);
  int in_middle = 0;
  double middle_tokens = 0.0, bucketed_slots = 0.0;
  const int batches = 4000;
  for (int i = 0; i < batches; ++i) {
    const BatchShape b = draw_batch_shape(q, 16, rng);
    const double longest = b.slots / 16;
    if (longest > 100 && longest <= 1000) {
      ++in_middle;
      middle_tokens += b.tokens;
    }
    bucketed_slots += b.slots;
  }
  EXPECT_NEAR(static_cast<double>(in_middle) / batches, f_hi - f_lo, 0.025);
  EXPECT_NEAR(middle_tokens / (16.0 * in_middle), conditional_mean, 0.02 * conditional_mean);
  // the same lengths padded to each batch's longest without buckets waste more positions
  q.collate = SequenceCollate::kPadToLongest;
  Rng rng2(3);
  double padded_slots = 0.0;
  for (int i = 0; i < batches; ++i) padded_slots += draw_batch_shape(q, 16, rng2).slots;
  EXPECT_LT(bucketed_slots, 0.8 * padded_slots);
}

TEST(SequenceShape, StepIsFixedPartPlusTokensPlusAttention) {
  SequenceConfig q = constant_lengths(100, SequenceCollate::kPadToMax, 512);
  q.step_s_per_token = 1e-6;
  q.step_s_per_token_squared = 1e-9;
  BatchShape b;
  b.slots = 8 * 512.0;
  b.row_tokens_squared = 8 * 512.0 * 512.0;
  // 10 ms + 4,096 x 1 us + 2,097,152 x 1 ns
  EXPECT_NEAR(sequence_step_s(0.010, q, b), 0.010 + 0.004096 + 0.002097152, 1e-12);
}

TEST(SequenceScenario, ShapesTheBatchBytesStepAndCapacities) {
  Profile p;
  json j = lm_scenario();
  j["sequence"]["bytes_per_token"] = 16;
  j["sequence"]["step_s_per_token"] = 1e-6;
  j["sequence"]["load_s_per_token"] = 1e-6;
  const Scenario s = parse_scenario(j, "lm.json", p);
  EXPECT_DOUBLE_EQ(s.batch_bytes(), 8 * 512 * 16.0);  // padded to 512
  EXPECT_DOUBLE_EQ(s.mean_samples_per_batch(), 8);
  // step: 10 ms + 4,096 positions x 1 us = 14.096 ms
  EXPECT_NEAR(s.mean_step_factor(), 0.014096 / 0.010, 1e-12);
  for (const auto& c : stage_capacities(s, p)) {
    if (c.stage == "gpu_compute") {
      EXPECT_NEAR(c.samples_per_s, 8 / 0.014096, 1e-9);
    }
  }
}

TEST(SequenceScenario, PackedEpochCountsItsSamples) {
  Profile p;
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample", 100}, {"max_tokens", 256}, {"collate", "pack"}};
  j["loader"]["batch_size"] = 4;  // rows: 11 samples a batch (see PackFillsRowsAndCutsTheLastSample)
  const Scenario s = parse_scenario(j, "lm.json", p);
  EXPECT_DOUBLE_EQ(s.mean_samples_per_batch(), 11);
  EXPECT_EQ(s.batches_per_epoch(), 9091);  // ceil(100,000 / 11)
}

TEST(SequenceScenario, BadSectionsNameTheKey) {
  json j = lm_scenario();
  j["sequence"].erase("tokens_per_sample");
  expect_input_error(j, "sequence.tokens_per_sample");
  j = lm_scenario();
  j["sequence"].erase("max_tokens");
  expect_input_error(j, "sequence.max_tokens");  // pad_to_max needs the length it pads to
  j = lm_scenario();
  j["sequence"]["collate"] = "bucket";
  expect_input_error(j, "sequence.bucket_boundaries_tokens");
  j["sequence"]["bucket_boundaries_tokens"] = {256, 128};
  expect_input_error(j, "sequence.bucket_boundaries_tokens[1]");
  j = lm_scenario();
  j["sequence"]["bucket_boundaries_tokens"] = {128};
  EXPECT_NO_THROW(parse_scenario(j, "lm.json", Profile{}));  // kept, unused, beside another collate (a sweep over it)
  j = lm_scenario();
  j["dataset"]["item_bytes"] = 1000;
  expect_input_error(j, "dataset.item_bytes");  // the shape sets the bytes
  j = lm_scenario();
  j["sequence"]["collate"] = "pack";
  j["sequence"]["tokens_per_sample"] = 1;
  j["sequence"]["max_tokens"] = 1000000;
  expect_input_error(j, "sequence.max_tokens");  // 8 million one-token samples a batch
  j = lm_scenario();
  j["sequence"]["collate"] = "padded";
  expect_input_error(j, "sequence.collate");
  j = lm_scenario();
  j["sequence"]["tokens_pre_sample"] = 5;
  expect_input_error(j, "sequence.tokens_pre_sample");
}

// A token budget (fairseq's max_tokens): constant 100-token samples under 1,000 positions take 10 a batch (11 x 100
// would pass it); a 4-sample cap binds first; padded to 512, one budget of 2,048 holds 4 rows; a 3,000-token sample
// alone is still a batch (cut at max_tokens 2,048, which exceeds a 1,000 budget).
TEST(SequenceShape, TokenBudgetSetsTheBatchSize) {
  Rng rng(1);
  SequenceConfig q = constant_lengths(100, SequenceCollate::kPadToLongest);
  q.batch_tokens = 1000;
  BatchShape b = draw_batch_shape(q, 64, rng);
  EXPECT_EQ(b.samples, 10);
  EXPECT_DOUBLE_EQ(b.slots, 1000);
  EXPECT_EQ(draw_batch_shape(q, 4, rng).samples, 4);
  SequenceConfig m = constant_lengths(100, SequenceCollate::kPadToMax, 512);
  m.batch_tokens = 2048;
  EXPECT_EQ(draw_batch_shape(m, 64, rng).samples, 4);
  SequenceConfig big = constant_lengths(3000, SequenceCollate::kPadToLongest, 2048);
  big.batch_tokens = 1000;
  b = draw_batch_shape(big, 64, rng);
  EXPECT_EQ(b.samples, 1);
  EXPECT_DOUBLE_EQ(b.slots, 2048);
}

TEST(SequenceScenario, TokenBudgetEpochAndItsRules) {
  Profile p;
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample", 100}, {"collate", "pad_to_longest"}, {"batch_tokens", 1000}};
  j["loader"]["batch_size"] = 64;
  const Scenario s = parse_scenario(j, "lm.json", p);
  EXPECT_DOUBLE_EQ(s.mean_samples_per_batch(), 10);
  EXPECT_EQ(s.batches_per_epoch(), 10000);  // 100,000 samples, 10 a batch
  j["sequence"] = {{"tokens_per_sample", 100}, {"collate", "pack"}, {"max_tokens", 256}, {"batch_tokens", 1000}};
  expect_input_error(j, "sequence.batch_tokens");  // a packed batch is batch_size rows of max_tokens
}

// DataCollatorWithPadding(pad_to_multiple_of=64) rounds the batch's longest up; pad_to_max and pack keep max_tokens.
TEST(SequenceShape, PadToMultipleRoundsTheLongestUp) {
  SequenceConfig q = constant_lengths(100, SequenceCollate::kPadToLongest);
  EXPECT_DOUBLE_EQ(padded_row_length(q, 100), 100);
  q.pad_to_multiple_of = 64;
  EXPECT_DOUBLE_EQ(padded_row_length(q, 100), 128);
  EXPECT_DOUBLE_EQ(padded_row_length(q, 128), 128);
  EXPECT_DOUBLE_EQ(padded_row_length(q, 1), 64);
  Rng rng(1);
  const BatchShape b = draw_batch_shape(q, 8, rng);
  EXPECT_DOUBLE_EQ(b.padded_length, 128);
  EXPECT_DOUBLE_EQ(b.slots, 8 * 128);
  EXPECT_DOUBLE_EQ(b.tokens, 800);
  EXPECT_DOUBLE_EQ(b.row_tokens_squared, 8 * 128.0 * 128.0);
  SequenceConfig m = constant_lengths(100, SequenceCollate::kPadToMax, 512);
  m.pad_to_multiple_of = 64;
  EXPECT_DOUBLE_EQ(padded_row_length(m, 100), 512);
}

// A histogram of lengths is drawn in proportion to its counts (1 : 2 : 7 over 200,000 draws, each share within 0.5
// point), and its mean and cv are the law the rest of the model reads: [[100, 1], [300, 1]] has mean 200, cv 0.5.
TEST(SequenceScenario, LengthHistogramIsDrawnByItsCounts) {
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample_histogram", {{10, 1}, {20, 2}, {30, 7}}}};
  Profile p;
  const Scenario s = parse_scenario(j, "lm.json", p);
  Rng rng(3);
  double n10 = 0, n20 = 0, n30 = 0;
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) {
    const double t = draw_sample_tokens(s.sequence, rng);
    (t == 10 ? n10 : t == 20 ? n20 : n30) += 1.0 / draws;
    ASSERT_TRUE(t == 10 || t == 20 || t == 30) << t;
  }
  EXPECT_NEAR(n10, 0.1, 0.005);
  EXPECT_NEAR(n20, 0.2, 0.005);
  EXPECT_NEAR(n30, 0.7, 0.005);
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 1}, {300, 1}}}};
  const Scenario two = parse_scenario(j, "lm.json", p);
  EXPECT_DOUBLE_EQ(two.sequence.tokens_per_sample.mean, 200);
  EXPECT_DOUBLE_EQ(two.sequence.tokens_per_sample.cv, 0.5);
}

TEST(SequenceScenario, BadLengthHistogramsNameTheEntry) {
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 1}, {100, 2}}}};
  expect_input_error(j, "sequence.tokens_per_sample_histogram[1][0]");
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 0}}}};
  expect_input_error(j, "sequence.tokens_per_sample_histogram[0][1]");
  j["sequence"] = {{"tokens_per_sample_histogram", {{1.5, 1}}}};
  expect_input_error(j, "sequence.tokens_per_sample_histogram[0][0]");
  j["sequence"] = {{"tokens_per_sample_histogram", json::array()}};
  expect_input_error(j, "sequence.tokens_per_sample_histogram");
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 1}}}, {"tokens_per_sample", 100}};
  expect_input_error(j, "sequence.tokens_per_sample");
  j["sequence"] = {{"tokens_per_sample", 100}, {"new_shape_host_s", -1}};
  expect_input_error(j, "sequence.new_shape_host_s");
  j["sequence"] = {{"tokens_per_sample", 100}, {"pad_to_multiple_of", 2.5}};
  expect_input_error(j, "sequence.pad_to_multiple_of");
  // dealt without replacement the counts are lines: whole numbers; as weights (replacement) they need not be
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 0.25}, {300, 0.75}}}};
  expect_input_error(j, "sequence.tokens_per_sample_histogram[0][1]");
  j["sequence"]["replacement"] = true;
  Profile p;
  EXPECT_NO_THROW(parse_scenario(j, "lm.json", p));
  j["sequence"] = {{"tokens_per_sample", 100}, {"replacement", false}};
  expect_input_error(j, "sequence.replacement");
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 1}}}, {"replacement", "no"}};
  expect_input_error(j, "sequence.replacement");
  j["sequence"] = {{"tokens_per_sample", 100}, {"shapes_run_before", {{8, 512}, {8, 0}}}};
  expect_input_error(j, "sequence.shapes_run_before[1][1]");
  j["sequence"] = {{"tokens_per_sample", 100}, {"shapes_run_before", {{8.5, 512}}}};
  expect_input_error(j, "sequence.shapes_run_before[0][0]");
  j["sequence"] = {{"tokens_per_sample", 100}, {"shapes_run_before", {8, 512}}};
  expect_input_error(j, "sequence.shapes_run_before[0]");
  j["sequence"] = {{"tokens_per_sample", 100}, {"shapes_run_before", 3}};
  expect_input_error(j, "sequence.shapes_run_before");
}

// Without replacement (RandomSampler's default), each pass over the dataset deals every line exactly once: the
// histogram 3 x 100, 2 x 200, 1 x 900 comes out as exactly those six lengths in each run of six draws, the pool
// refilling itself between passes; refill() in mid-pass starts a whole pass again.
TEST(SequenceShape, APoolDealsEveryLineOncePerPass) {
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 3}, {200, 2}, {900, 1}}}};
  Profile p;
  const Scenario s = parse_scenario(j, "lm.json", p);
  LengthPool pool(s.sequence);
  Rng rng(5);
  for (int pass = 0; pass < 50; ++pass) {
    std::vector<double> drawn;
    for (int i = 0; i < 6; ++i) drawn.push_back(draw_sample_tokens(s.sequence, rng, &pool));
    std::sort(drawn.begin(), drawn.end());
    EXPECT_EQ(drawn, (std::vector<double>{100, 100, 100, 200, 200, 900})) << "pass " << pass;
  }
  draw_sample_tokens(s.sequence, rng, &pool);
  draw_sample_tokens(s.sequence, rng, &pool);
  pool.refill();
  EXPECT_DOUBLE_EQ(pool.remaining(), 6);
}

// Each draw is uniform over the lines left: the first of a pass is 900 with probability 1/6, and the second is 900
// with probability 1/6 too (5/6 x 1/5), over 60,000 passes (each share within 0.6 point, about 5 standard errors).
TEST(SequenceShape, APoolDrawsUniformlyAmongTheLinesLeft) {
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 3}, {200, 2}, {900, 1}}}};
  Profile p;
  const Scenario s = parse_scenario(j, "lm.json", p);
  LengthPool pool(s.sequence);
  Rng rng(9);
  const int passes = 60000;
  double first_900 = 0, second_900 = 0, first_100 = 0;
  for (int i = 0; i < passes; ++i) {
    pool.refill();
    const double a = draw_sample_tokens(s.sequence, rng, &pool), b = draw_sample_tokens(s.sequence, rng, &pool);
    first_900 += (a == 900) / static_cast<double>(passes);
    second_900 += (b == 900) / static_cast<double>(passes);
    first_100 += (a == 100) / static_cast<double>(passes);
  }
  EXPECT_NEAR(first_900, 1.0 / 6, 0.006);
  EXPECT_NEAR(second_900, 1.0 / 6, 0.006);
  EXPECT_NEAR(first_100, 0.5, 0.006);
}

// The distinct padded lengths a batch can have: [100, 300, 700, 1,500] truncated at 1,024 and rounded up to 256 give
// 256, 512, 768 and 1,024 (4); to 512, 512 and 1,024 (2); a law cut at 2,048 rounded to 64 gives 32; a law without
// a cut is unbounded (0); pad_to_max has one.
TEST(SequenceShape, PaddedLengthCountByHand) {
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 1}, {300, 1}, {700, 1}, {1500, 1}}}, {"max_tokens", 1024},
                   {"pad_to_multiple_of", 256}, {"collate", "pad_to_longest"}};
  Profile p;
  EXPECT_EQ(padded_length_count(parse_scenario(j, "lm.json", p).sequence), 4);
  j["sequence"]["pad_to_multiple_of"] = 512;
  EXPECT_EQ(padded_length_count(parse_scenario(j, "lm.json", p).sequence), 2);
  j["sequence"]["pad_to_multiple_of"] = 0;
  EXPECT_EQ(padded_length_count(parse_scenario(j, "lm.json", p).sequence), 4);  // 100, 300, 700 and 1,024
  j["sequence"] = {{"tokens_per_sample", 300}, {"max_tokens", 2048}, {"pad_to_multiple_of", 64}};
  EXPECT_EQ(padded_length_count(parse_scenario(j, "lm.json", p).sequence), 32);
  j["sequence"] = {{"tokens_per_sample", 300}};
  EXPECT_EQ(padded_length_count(parse_scenario(j, "lm.json", p).sequence), 0);
  j["sequence"] = {{"tokens_per_sample", 300}, {"max_tokens", 512}, {"collate", "pad_to_max"}};
  EXPECT_EQ(padded_length_count(parse_scenario(j, "lm.json", p).sequence), 1);
}

// The padded lengths a warm-up runs through: the histogram's, rounded up and truncated (256, 512, 768, 1,024); and
// sequence.warm_up_shapes is refused where they are unbounded or rows vary (batch_tokens).
TEST(SequenceShape, PaddedLengthsAndTheirWarmUp) {
  json j = lm_scenario();
  j["sequence"] = {{"tokens_per_sample_histogram", {{100, 1}, {300, 1}, {700, 1}, {1500, 1}}}, {"max_tokens", 1024},
                   {"pad_to_multiple_of", 256}, {"collate", "pad_to_longest"}, {"warm_up_shapes", true}};
  Profile p;
  EXPECT_EQ(padded_lengths(parse_scenario(j, "lm.json", p).sequence), (std::vector<double>{256, 512, 768, 1024}));
  j["sequence"] = {{"tokens_per_sample", 300}, {"max_tokens", 2048}, {"pad_to_multiple_of", 64}};
  const std::vector<double> law = padded_lengths(parse_scenario(j, "lm.json", p).sequence);
  ASSERT_EQ(law.size(), 32u);
  EXPECT_DOUBLE_EQ(law.front(), 64);
  EXPECT_DOUBLE_EQ(law.back(), 2048);
  j["sequence"] = {{"tokens_per_sample", 300}, {"warm_up_shapes", true}};
  expect_input_error(j, "sequence.warm_up_shapes");
  j["sequence"] = {{"tokens_per_sample", 300}, {"max_tokens", 2048}, {"batch_tokens", 8192}, {"warm_up_shapes", true}};
  expect_input_error(j, "sequence.warm_up_shapes");
}
