// Variable-length token sequences: how a batch of them is shaped (padding, bucketing, packing) and what that
// shape costs in bytes, tokenization and GPU time. A scenario's `sequence` section (docs/scenario.md); the
// simulator draws one shape per batch, the analytic bound uses their expectation. Pure: no SimGrid.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "models/distribution.hpp"

namespace pipeplan {

// How collate_fn lays a batch of sequences out.
enum class SequenceCollate {
  kPadToLongest,  // pad every row to the batch's longest (pad_sequence, DataCollatorWithPadding)
  kPadToMax,      // pad every row to max_tokens (tokenizer padding="max_length")
  kBucket,        // a length-grouped batch sampler: a batch's samples come from one length bucket, padded to the longest
  kPack,          // samples concatenated into batch_size rows of max_tokens, no padding
};

const char* to_string(SequenceCollate c);

struct SequenceConfig {
  bool enabled = false;  // the scenario has a `sequence` section
  Distribution tokens_per_sample{512.0, 0.0, Distribution::Kind::kLognormal};  // a sample's tokens, before truncation
  // The dataset's own lengths (sequence.tokens_per_sample_histogram): tokens in increasing order and the running sum
  // of their sample counts; a draw picks one in proportion to its count. A finite dataset has few distinct long
  // lengths, so a batch's longest repeats far more often than under a continuous law (validation run 63). Empty: the
  // law tokens_per_sample (which the reader then sets to the histogram's mean and cv).
  std::vector<double> histogram_tokens;
  std::vector<double> histogram_cumulative;
  // How the sampler deals the histogram's lines (sequence.replacement, RandomSampler's knob). false: each pass over
  // the dataset is a fresh permutation (DataLoader(shuffle=True), DistributedSampler), so a long line ends at most one
  // batch a pass; true: every sample drawn independently (RandomSampler(replacement=True), or a histogram of weights
  // standing for an unbounded dataset). Without a histogram lengths are always independent draws of the law.
  bool replacement = false;
  std::int64_t max_tokens = 0;  // truncation (and pad_to_max's length, pack's row length); 0: none
  SequenceCollate collate = SequenceCollate::kPadToLongest;
  std::vector<std::int64_t> bucket_boundaries_tokens;  // increasing; bucket k holds lengths in (b[k-1], b[k]]
  // Dynamic batching by a token budget (fairseq's max_tokens): a batch takes samples while its padded positions stay
  // within this many (at most loader.batch_size samples); 0: batch_size samples a batch. Not with pack.
  std::int64_t batch_tokens = 0;
  double bytes_per_token = 8.0;            // the collated batch's bytes per token position (every tensor it builds)
  double load_s_per_token = 0.0;           // __getitem__ CPU per token (tokenization), beside load_s_per_sample
  double step_s_per_token = 0.0;           // GPU time per token position of the batch, padding included
  double step_s_per_token_squared = 0.0;   // GPU time per squared row length, summed over rows (attention)
  // The step's GPU time is at least this (a small batch's kernels cannot fill the GPU: latency-bound; run 63's
  // decoder step, 8.9 ms up to about 8k positions). 0: none.
  double step_s_floor = 0.0;
  // pad_to_longest and bucket round the batch's padded length up to a multiple of this (DataCollatorWithPadding's
  // pad_to_multiple_of): fewer distinct shapes, more padding. 0 or 1: off.
  std::int64_t pad_to_multiple_of = 0;
  // Host time (GIL held, GPU starved) the step spends the first time a process runs a batch shape (rows x padded
  // length): kernel plans keyed by shape (cuDNN attention graphs, cudnn.benchmark's search, torch.compile's
  // recompiles). Measured 100-150 ms a shape for scaled_dot_product_attention on the H200 (validation run 63).
  double new_shape_host_s = 0.0;
  // The share of a new shape's step GPU time launched before its last plan is built, which runs while the plans
  // build (an idle GPU's wait is then new_shape_host_s less that): about a quarter in validation run 63 (finding 7),
  // where the backward's plans are built after the forward's kernels went out. 0: the GPU waits for the whole build.
  double new_shape_gpu_overlap_fraction = 0.0;
  // (rows, padded length) whose plans the process already holds when the job starts (sequence.shapes_run_before:
  // an earlier job or evaluation in the same process, the validation harness's earlier cases): not new to any rank.
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes_run_before;
  // Each rank runs one step on every (rows, padded length) the job can meet before it starts (a warm-up loop over
  // dummy batches), so no step of the job builds plans; the warm-up's own time is reported apart (the report's
  // suggestion for a loop held up by new shapes). Needs a bounded set of padded lengths.
  bool warm_up_shapes = false;
};

// One batch as the pipeline sees it.
struct BatchShape {
  int samples = 0;           // samples in it: each one loaded (and tokenized) by its worker
  double bytes = 0.0;        // the collated batch's bytes: what collate writes, the pin thread copies, H2D moves
  double load_tokens = 0.0;  // tokens its __getitem__ calls produce, before truncation (sequence only)
  double tokens = 0.0;       // real tokens in the batch tensor, after truncation (sequence only)
  double slots = 0.0;        // token positions of the batch tensor, padding included (sequence only)
  double rows = 0.0;         // rows of the batch tensor (sequence only)
  double row_tokens_squared = 0.0;  // the sum over rows of a row's length squared (sequence only)
  double padded_length = 0.0;       // the batch tensor's row length, padding included (sequence only)
};

// The batch's padded row length for its longest (truncated) sample: max_tokens with pad_to_max, else the longest
// rounded up to pad_to_multiple_of. Pure.
double padded_row_length(const SequenceConfig& seq, double longest_tokens);

// How many distinct padded lengths a batch can have: 1 with pad_to_max or pack; with pad_to_longest or bucket, the
// distinct padded_row_length of the histogram's (truncated) lengths, or of 1..max_tokens under a law; 0 where
// unbounded (a law without max_tokens). With batch_tokens the rows vary too, which this does not count. Pure.
std::int64_t padded_length_count(const SequenceConfig& seq);

// The most padded lengths sequence.warm_up_shapes may run through before the job (each a plan build).
constexpr std::int64_t kMaxWarmUpLengths = 100000;

// Those padded lengths, increasing (call where padded_length_count is bounded: it lists them all). Pure.
std::vector<double> padded_lengths(const SequenceConfig& seq);

// Whether sequence.warm_up_shapes can run every shape the job meets: a bounded set of padded lengths (at most
// kMaxWarmUpLengths) at fixed rows (no batch_tokens). Pure.
bool warm_up_possible(const SequenceConfig& seq);

// The mean of many batches' shapes (samples need not be whole: a packed batch holds 7.6 of them on average).
struct MeanBatchShape {
  double samples = 0.0, bytes = 0.0, load_tokens = 0.0, tokens = 0.0, slots = 0.0, rows = 0.0, row_tokens_squared = 0.0;
  // the mean of the batches' GPU steps (sequence_step_s at expected_batch_shape's fixed_step_s): with step_s_floor
  // the step is not linear in the shape, so the mean shape's step is not the mean step
  double step_s = 0.0;
  // The shape with whole samples, for the cost formulas that take one batch (sequence_step_s).
  BatchShape as_batch() const;
};

// The GPU time of a step on a batch of this shape: the step's fixed part (training.step_s) plus its per-token and
// attention terms, at least step_s_floor. Pure.
double sequence_step_s(double fixed_step_s, const SequenceConfig& seq, const BatchShape& shape);

// A finite dataset's lines dealt without replacement: the histogram's counts are the pool, a draw takes one line
// at random from what is left, an empty pool refills (the next pass over the dataset) and refill() starts a pass
// early (an epoch's start: each rank's share of DistributedSampler's permutation is a draw without replacement from
// the whole dataset). A Fenwick tree over the bins: O(log bins) a draw.
class LengthPool {
 public:
  // Full. seq must have a histogram of whole counts and outlive the pool (its vectors are read, not copied: a pool
  // per rank and twin adds only its tree).
  explicit LengthPool(const SequenceConfig& seq);
  void refill();
  // A line picked at random from the pool (refilled first if empty), left in it: its bin. take() removes it.
  std::size_t pick(Rng& rng);
  void take(std::size_t bin);
  double tokens(std::size_t bin) const { return (*tokens_)[bin]; }
  double remaining() const { return remaining_; }

 private:
  const std::vector<double>* tokens_;      // seq.histogram_tokens
  const std::vector<double>* cumulative_;  // seq.histogram_cumulative
  std::vector<double> tree_;               // Fenwick sums of the lines left, 1-based
  double remaining_ = 0.0;
  std::size_t top_bit_ = 1;                // the highest power of two <= bins
};

// One sample's length in tokens, drawn: rounded, at least 1 (before truncation). With a pool, one line taken from it.
double draw_sample_tokens(const SequenceConfig& seq, Rng& rng, LengthPool* pool = nullptr);

// A batch of `loader_batch` (samples, or rows with pack) drawn from `seq`: lengths drawn per sample, truncated at
// max_tokens, laid out by the collate. With pack, samples are drawn until the batch's rows x max_tokens positions
// are full; the last one is cut where the batch ends (its rest tokenized, then dropped). With batch_tokens, samples
// are taken while (samples + 1) x the padded length stays within it (at least one, at most loader_batch); the
// sample that would overflow starts the next batch, which a fresh draw stands for. With a pool the samples are
// taken from it (a bucket's rejected candidates stay). Pure but for the draws and the pool.
BatchShape draw_batch_shape(const SequenceConfig& seq, int loader_batch, Rng& rng, LengthPool* pool = nullptr);

// The mean of draw_batch_shape over `batches` draws from a fixed stream of `seed`: what the analytic bound, the
// epoch's length under packing and the report's expectations use. Deterministic.
MeanBatchShape expected_batch_shape(const SequenceConfig& seq, int loader_batch, std::uint64_t seed, int batches,
                                    double fixed_step_s = 0.0);

// How many batches expected_batch_shape draws for a batch of `loader_batch` samples or rows: enough for a stable
// mean (4,096 batches of 64), at most about 262,144 draws of a sample.
int expected_shape_batches(int loader_batch, double samples_per_batch);

}  // namespace pipeplan
