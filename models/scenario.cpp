#include "models/scenario.hpp"

#include <algorithm>
#include <cmath>

#include "models/atomic_file.hpp"
#include "models/collectives.hpp"
#include "models/cost_models.hpp"
#include "models/input_error.hpp"
#include "models/json_reader.hpp"
#include "models/profile.hpp"

namespace pipeplan {

namespace {

// A distribution is {"mean", "cv", "kind"} or a bare number (constant).
Distribution read_distribution(ObjectReader& parent, const std::string& key, Distribution fallback, Range mean_range) {
  const json* v = parent.raw(key);
  if (!v) return fallback;
  if (v->is_number()) {
    const double x = v->get<double>();
    if (!std::isfinite(x) || !mean_range.contains(x)) parent.fail(key, *v, mean_range.describe(false));
    return Distribution{x, 0.0, Distribution::Kind::kConstant};
  }
  if (!v->is_object()) parent.fail(key, *v, "a number or {\"mean\", \"cv\", \"kind\"}");
  ObjectReader r = parent.object(key);
  Distribution d;
  d.mean = r.required_number("mean", mean_range);
  d.cv = r.number("cv", 0.0, Range::between(0.0, 10.0));
  const std::string kind = r.choice("kind", "lognormal", {"lognormal", "gamma", "constant"});
  d.kind = kind == "gamma" ? Distribution::Kind::kGamma
           : kind == "constant" ? Distribution::Kind::kConstant
                                : Distribution::Kind::kLognormal;
  r.finish();
  return d;
}

// sequence.tokens_per_sample_histogram: [[tokens, samples], ...] with tokens increasing integers in 1..1e8 and
// counts > 0; sets the histogram and tokens_per_sample's mean and cv (what the rest of the model reads of the law).
void read_length_histogram(const std::string& file, const std::string& path, const json& h, SequenceConfig& q) {
  constexpr std::size_t kMaxBins = 1000000;
  if (!h.is_array() || h.empty() || h.size() > kMaxBins)
    throw InputError(file, path, show_value(h), "an array of 1 to 1,000,000 [tokens, samples] pairs");
  double n = 0.0, sum = 0.0, sum_sq = 0.0;
  for (std::size_t i = 0; i < h.size(); ++i) {
    const json& pair = h[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number())
      throw InputError(file, at, show_value(pair), "a [tokens, samples] pair of numbers");
    const double tokens = pair[0].get<double>(), count = pair[1].get<double>();
    const double previous = q.histogram_tokens.empty() ? 0.0 : q.histogram_tokens.back();
    if (!std::isfinite(tokens) || std::floor(tokens) != tokens || tokens < 1 || tokens > 1.0e8 || tokens <= previous)
      throw InputError(file, at + "[0]", show_value(pair[0]),
                       i > 0 ? "an integer above the previous length (" + std::to_string(static_cast<long long>(previous)) + ")"
                             : "an integer >= 1 (a length in tokens)");
    if (!std::isfinite(count) || count <= 0 || count > 1.0e15)
      throw InputError(file, at + "[1]", show_value(pair[1]), "a count of samples > 0");
    n += count;
    sum += count * tokens;
    sum_sq += count * tokens * tokens;
    q.histogram_tokens.push_back(tokens);
    q.histogram_cumulative.push_back(n);
  }
  const double mean = sum / n;
  q.tokens_per_sample = Distribution{mean, std::sqrt(std::max(0.0, sum_sq / n - mean * mean)) / mean,
                                     Distribution::Kind::kLognormal};
}

// sequence.shapes_run_before: [[rows, padded length], ...], each a whole number in 1..1e8, at most 1,000,000 pairs.
void read_shapes_run_before(const std::string& file, const std::string& path, const json& b, SequenceConfig& q) {
  if (!b.is_array() || b.size() > 1000000)
    throw InputError(file, path, show_value(b), "an array of up to 1,000,000 [rows, padded length] pairs");
  for (std::size_t i = 0; i < b.size(); ++i) {
    const json& pair = b[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number())
      throw InputError(file, at, show_value(pair), "a [rows, padded length] pair of numbers");
    for (int j = 0; j < 2; ++j) {
      const double v = pair[j].get<double>();
      if (!std::isfinite(v) || std::floor(v) != v || v < 1 || v > 1.0e8)
        throw InputError(file, at + "[" + std::to_string(j) + "]", show_value(pair[j]),
                         j == 0 ? "a whole number of rows in 1..1e8" : "a whole padded length in tokens in 1..1e8");
    }
    q.shapes_run_before.emplace_back(pair[0].get<std::int64_t>(), pair[1].get<std::int64_t>());
  }
}

// Explicit draws a batch of sequences may take (each sample's length is drawn): bounds a step's cost.
constexpr double kMaxSequenceSamplesPerBatch = 65536;

// The `sequence` section (docs/scenario.md), checked against the loader it shapes; sets s.sequence and its mean.
void read_sequence(ObjectReader& top, Scenario& s, bool item_bytes_given) {
  const std::string& file = top.file();
  ObjectReader r = top.object("sequence");
  SequenceConfig& q = s.sequence;
  q.enabled = true;
  if (const json* h = r.raw("tokens_per_sample_histogram")) {
    read_length_histogram(file, r.path_of("tokens_per_sample_histogram"), *h, q);
    if (r.has("tokens_per_sample"))
      throw InputError(file, r.path_of("tokens_per_sample"), show_value(*r.raw("tokens_per_sample")),
                       "nothing beside tokens_per_sample_histogram (the histogram is the lengths' law)");
    q.replacement = r.boolean("replacement", false);
    if (!q.replacement) {
      // dealt without replacement, the counts are lines of the dataset
      double previous = 0.0;
      for (std::size_t i = 0; i < q.histogram_cumulative.size(); ++i) {
        const double count = q.histogram_cumulative[i] - previous;
        previous = q.histogram_cumulative[i];
        if (std::floor(count) != count)
          throw InputError(file, r.path_of("tokens_per_sample_histogram") + "[" + std::to_string(i) + "][1]",
                           show_value((*h)[i][1]),
                           "a whole count of samples (lines dealt without replacement; sequence.replacement: true "
                           "reads the counts as weights)");
      }
    }
  } else if (r.has("replacement")) {
    throw InputError(file, r.path_of("replacement"), show_value(*r.raw("replacement")),
                     "nothing without tokens_per_sample_histogram (lengths drawn from a law are independent: an "
                     "unbounded dataset)");
  } else if (!r.has("tokens_per_sample")) {
    throw InputError(file, r.path_of("tokens_per_sample"), "nothing",
                     "a sample's length in tokens, a number >= 1 or {\"mean\", \"cv\", \"kind\"} (required in a "
                     "sequence section without tokens_per_sample_histogram)");
  } else {
    q.tokens_per_sample = read_distribution(r, "tokens_per_sample", q.tokens_per_sample, Range::at_least(1));
  }
  const std::string collate = r.choice("collate", "pad_to_longest", {"pad_to_longest", "pad_to_max", "bucket", "pack"});
  q.collate = collate == "pad_to_max" ? SequenceCollate::kPadToMax
              : collate == "bucket"   ? SequenceCollate::kBucket
              : collate == "pack"     ? SequenceCollate::kPack
                                      : SequenceCollate::kPadToLongest;
  q.max_tokens = r.integer("max_tokens", 0, Range::between(0, 1.0e8));
  if (q.max_tokens == 0 && (q.collate == SequenceCollate::kPadToMax || q.collate == SequenceCollate::kPack))
    throw InputError(file, r.path_of("max_tokens"), r.has("max_tokens") ? "0" : "nothing",
                     "an integer >= 1 with collate=" + collate + " (the length every row is " +
                         (q.collate == SequenceCollate::kPack ? "packed" : "padded") + " to)");
  if (const json* b = r.raw("bucket_boundaries_tokens")) {
    // checked whatever the collate, used only by bucket: a sweep over sequence.collate keeps them in the scenario
    if (!b->is_array() || b->empty() || b->size() > 1024)
      r.fail("bucket_boundaries_tokens", *b, "an array of 1 to 1,024 increasing token counts >= 1");
    for (std::size_t i = 0; i < b->size(); ++i) {
      const json& x = (*b)[i];
      const bool integral = x.is_number_integer() || (x.is_number() && std::floor(x.get<double>()) == x.get<double>());
      const double v = x.is_number() ? x.get<double>() : 0.0;
      if (!integral || v < 1 || v > 1.0e8 || (i > 0 && v <= static_cast<double>(q.bucket_boundaries_tokens.back())))
        throw InputError(file, r.path_of("bucket_boundaries_tokens") + "[" + std::to_string(i) + "]", show_value(x),
                         i > 0 ? "an integer above the previous boundary (" + std::to_string(q.bucket_boundaries_tokens.back()) + ")"
                               : "an integer >= 1");
      q.bucket_boundaries_tokens.push_back(static_cast<std::int64_t>(v));
    }
  } else if (q.collate == SequenceCollate::kBucket) {
    throw InputError(file, r.path_of("bucket_boundaries_tokens"), "nothing",
                     "an array of increasing token counts with collate=bucket (each batch's samples from one bucket)");
  }
  q.batch_tokens = r.integer("batch_tokens", 0, Range::between(0, 1.0e12));
  if (q.batch_tokens > 0 && q.collate == SequenceCollate::kPack)
    throw InputError(file, r.path_of("batch_tokens"), std::to_string(q.batch_tokens),
                     "0 with collate=pack (a packed batch is loader.batch_size rows of max_tokens)");
  q.bytes_per_token = r.number("bytes_per_token", 8.0, Range::between(0, 1.0e6));
  if (q.bytes_per_token <= 0.0) r.fail("bytes_per_token", q.bytes_per_token, "a number > 0");
  q.load_s_per_token = r.number("load_s_per_token", 0.0, Range::between(0, 1));
  q.step_s_per_token = r.number("step_s_per_token", 0.0, Range::between(0, 1));
  q.step_s_per_token_squared = r.number("step_s_per_token_squared", 0.0, Range::between(0, 1));
  q.step_s_floor = r.number("step_s_floor", 0.0, Range::between(0, 3600));
  q.pad_to_multiple_of = r.integer("pad_to_multiple_of", 0, Range::between(0, 1.0e6));
  q.new_shape_host_s = r.number("new_shape_host_s", 0.0, Range::between(0, 60));
  q.new_shape_gpu_overlap_fraction = r.number("new_shape_gpu_overlap_fraction", 0.0, Range::between(0, 1));
  if (const json* b = r.raw("shapes_run_before")) read_shapes_run_before(file, r.path_of("shapes_run_before"), *b, q);
  q.warm_up_shapes = r.boolean("warm_up_shapes", false);
  if (q.warm_up_shapes && !warm_up_possible(q)) {
    const std::int64_t lengths = padded_length_count(q);
    throw InputError(file, r.path_of("warm_up_shapes"), "true",
                     "false where the batch shapes are not a bounded set (a length law without max_tokens, over " +
                         std::to_string(kMaxWarmUpLengths) + " padded lengths, or batch_tokens' varying rows): " +
                         (lengths > 0 ? std::to_string(lengths) + " padded lengths" : std::string("unbounded")));
  }
  r.finish();
  if (item_bytes_given)
    throw InputError(file, "dataset.item_bytes", show_value(s.dataset.item_bytes),
                     "no item_bytes with a sequence section (a batch's bytes are its padded tokens x sequence.bytes_per_token)");
  // each sample's length is drawn: keep a batch's draws bounded
  const double samples_per_batch =
      q.collate == SequenceCollate::kPack
          ? static_cast<double>(s.loader.batch_size) * static_cast<double>(q.max_tokens) / q.tokens_per_sample.mean
          : s.loader.batch_size;
  if (samples_per_batch > kMaxSequenceSamplesPerBatch)
    throw InputError(file, q.collate == SequenceCollate::kPack ? "sequence.max_tokens" : "loader.batch_size",
                     q.collate == SequenceCollate::kPack ? std::to_string(q.max_tokens) : std::to_string(s.loader.batch_size),
                     "at most 65,536 samples a batch with a sequence section" +
                         std::string(q.collate == SequenceCollate::kPack
                                         ? " (batch_size x max_tokens / tokens_per_sample.mean)"
                                         : ""));
  s.sequence_mean = expected_batch_shape(q, s.loader.batch_size, derive_seed(s.seed, 0x5E9),
                                         expected_shape_batches(s.loader.batch_size, samples_per_batch), s.training.step_s());
}

// The `fsdp` section (docs/scenario.md): a model wrapped in FullyShardedDataParallel, unit by unit.
void read_fsdp(ObjectReader& top, Scenario& s) {
  const std::string& file = top.file();
  ObjectReader r = top.object("fsdp");
  FsdpConfig& f = s.fsdp;
  const json* units = r.raw("unit_parameter_bytes");
  const std::string expected = "the unsharded parameter bytes of each FSDP unit in forward order: an array, or "
                               "{\"count\": N, \"bytes\": B} (1 to " + std::to_string(kMaxFsdpUnits) + " units)";
  if (!units) throw InputError(file, r.path_of("unit_parameter_bytes"), "nothing", expected + " (required in an fsdp section)");
  if (units->is_array()) {
    if (units->empty() || units->size() > static_cast<std::size_t>(kMaxFsdpUnits)) r.fail("unit_parameter_bytes", *units, expected);
    for (std::size_t i = 0; i < units->size(); ++i) {
      const json& b = (*units)[i];
      if (!b.is_number() || !(b.get<double>() > 0.0) || !std::isfinite(b.get<double>()))
        throw InputError(file, r.path_of("unit_parameter_bytes") + "[" + std::to_string(i) + "]", show_value(b), "a number > 0");
      f.unit_parameter_bytes.push_back(b.get<double>());
    }
  } else if (units->is_object()) {
    ObjectReader q = r.object("unit_parameter_bytes");
    const auto count = q.integer("count", 1, Range::between(1, kMaxFsdpUnits));
    const double bytes = q.required_number("bytes", Range::positive());
    q.finish();
    f.unit_parameter_bytes.assign(static_cast<std::size_t>(count), bytes);
  } else {
    r.fail("unit_parameter_bytes", *units, expected);
  }
  f.gradient_bytes_per_parameter_byte = r.number("gradient_bytes_per_parameter_byte", 1.0, {0.0, 16.0, true});
  f.reshard_after_forward = r.boolean("reshard_after_forward", true);
  f.all_gathers_in_flight = static_cast<int>(r.integer("all_gathers_in_flight", 2, Range::between(1, kMaxFsdpUnits)));
  const std::string prefetch = r.choice("backward_prefetch", "backward_pre", {"backward_pre", "backward_post", "none"});
  f.backward_prefetch = prefetch == "backward_post" ? FsdpBackwardPrefetch::kBackwardPost
                        : prefetch == "none"        ? FsdpBackwardPrefetch::kNone
                                                    : FsdpBackwardPrefetch::kBackwardPre;
  r.finish();
  if (s.ddp.gradient_bytes > 0.0)
    throw InputError(file, "ddp.gradient_bytes", show_value(s.ddp.gradient_bytes),
                     "0 with an fsdp section (a model is wrapped in DDP or in FSDP, not both)");
}

}  // namespace

double estimated_activities(const Scenario& s, std::int64_t steps) {
  const double buckets = (s.all_reduces_gradients() ? 1.0 + s.ddp.gradient_bytes / (s.ddp.bucket_cap_mb * 1048576.0) : 0.0) +
                         3.0 * static_cast<double>(s.fsdp.unit_parameter_bytes.size());
  // per rank-step: worker, pin, receive, copy, compute, host, synthetic twin; plus buckets on both;
  // each event costs more when many threads share the CPU host (the sharing solve grows with them)
  const double threads = static_cast<double>(s.node.gpus) * (s.loader.num_workers + 2);
  return static_cast<double>(steps) * s.simulated_ranks() * (10.0 + 2.0 * buckets) *
         (1.0 + threads / 64.0);
}

std::vector<DutyPoint> duty_curve_from_profile(double step_s, const ComputeProfile& compute) {
  const auto& shape = compute.step_vs_gpu_duty;
  std::vector<DutyPoint> out;
  if (shape.empty() || step_s <= 0.0) return out;
  // the shape's value at duty 1 (flat beyond its last point), the synthetic-data loop's duty
  double at_one = shape.back().relative_time;
  if (at_one <= 0.0) return out;
  // with calibrate's time constant the steady duties are re-read at the share a step starts with
  const auto read = compute.gpu_duty_time_constant_s
                        ? shape_at_step_start(shape, step_s / at_one, *compute.gpu_duty_time_constant_s)
                        : shape;
  for (const auto& q : read) out.push_back({q.duty, step_s * q.relative_time / at_one});
  return out;
}

double GpuClockHumps::amplitude_at(double duty) const {
  return piecewise_linear(amplitude_vs_gpu_duty, duty, &HumpPoint::duty, &HumpPoint::amplitude, 0.0);
}

double TrainingConfig::step_s_at_duty(double duty) const {
  return piecewise_linear(step_s_vs_gpu_duty, duty, &DutyPoint::duty, &DutyPoint::step_s, step_s());
}

double DdpConfig::host_s() const {
  if (gradient_bytes <= 0.0) return 0.0;
  return host_s_per_step + host_s_per_parameter * static_cast<double>(parameter_bytes.size()) +
         host_s_per_bucket * static_cast<double>(bucket_bytes().size());
}

std::vector<double> DdpConfig::bucket_bytes() const {
  const double first = first_bucket_mb * 1048576.0, cap = bucket_cap_mb * 1048576.0;
  return parameter_bytes.empty() ? ddp_bucket_bytes(gradient_bytes, first, cap)
                                 : ddp_bucket_bytes_by_parameter(parameter_bytes, first, cap);
}

std::int64_t Scenario::batches_per_epoch() const {
  const std::int64_t n = samples_per_rank();
  if (sequence.enabled && (sequence.collate == SequenceCollate::kPack || sequence.batch_tokens > 0)) {
    // a packed or token-budget batch takes a varying number of samples: the epoch ends when its samples are used up,
    // on average
    const double batches = static_cast<double>(n) / std::max(1.0, sequence_mean.samples);
    return static_cast<std::int64_t>(loader.drop_last ? std::floor(batches) : std::ceil(batches));
  }
  const std::int64_t b = loader.batch_size;
  return loader.drop_last ? n / b : (n + b - 1) / b;
}

BatchShape Scenario::batch_shape(int loader_batch, std::uint64_t stream_seed) const {
  if (sequence.enabled) {
    Rng rng(stream_seed);
    return draw_batch_shape(sequence, loader_batch, rng);
  }
  BatchShape b;
  b.samples = loader_batch;
  b.bytes = loader_batch * dataset.item_bytes;
  return b;
}

double Scenario::step_factor(const BatchShape& shape) const {
  return sequence.enabled ? sequence_step_s(training.step_s(), sequence, shape) / training.step_s() : 1.0;
}

double Scenario::mean_step_factor() const {
  // linear in the shape's sums, the mean shape's step is the mean step; with a floor, the draws' mean step
  if (sequence.enabled && sequence.step_s_floor > 0.0) return sequence_mean.step_s / training.step_s();
  return sequence.enabled ? sequence_step_s(training.step_s(), sequence, sequence_mean.as_batch()) / training.step_s()
                          : 1.0;
}

json read_json_file(const std::string& path) {
  constexpr std::size_t kMaxJsonFileBytes = std::size_t{256} << 20;  // far above any scenario or profile
  const TextFile file = read_text_file(path, kMaxJsonFileBytes);
  if (file.cannot_open) throw InputError(path, "cannot open the file (missing or unreadable)");
  if (!file.ok()) throw InputError(path, "(document)", file.error, "a scenario or profile JSON file");
  try {
    return json::parse(file.text);
  } catch (const json::parse_error& e) {
    // nlohmann's message names the byte offset; keep it on one line.
    std::string what = e.what();
    for (auto& c : what) if (c == '\n' || c == '\r') c = ' ';
    throw InputError(path, "(document): malformed JSON: " + what + "; expected a JSON object");
  }
}

void apply_override(json& document, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set", "", "\"" + assignment + "\"", "KEY.PATH=VALUE (for example loader.num_workers=8)");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const json::parse_error&) {
    value = text;  // a bare word is a string: --set transfer.copy_stream=side
  }
  json* node = &document;
  std::size_t start = 0;
  std::string walked;
  for (;;) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError("--set", path, "\"" + assignment + "\"", "a dotted path of non-empty keys");
    if (!node->is_object()) throw InputError("--set", walked, show_value(*node), "an object to set \"" + key + "\" in");
    walked += (walked.empty() ? "" : ".") + key;
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    json& child = (*node)[key];
    if (child.is_null()) child = json::object();
    node = &child;
    start = dot + 1;
  }
}

Scenario parse_scenario(const json& document, const std::string& file, const Profile& profile) {
  Scenario s;
  s.file = file;
  ObjectReader top(document, file, "");
  top.choice("schema", "pipeplan-scenario/1", {"pipeplan-scenario/1"});
  {
    std::string stem = file;
    if (auto slash = stem.find_last_of('/'); slash != std::string::npos) stem = stem.substr(slash + 1);
    if (auto dot = stem.rfind(".json"); dot != std::string::npos) stem = stem.substr(0, dot);
    s.name = top.string("name", stem);
  }
  s.description = top.string("description", "");
  s.seed = static_cast<std::uint64_t>(top.integer("seed", 1, Range::between(0, 9.0e15)));
  bool item_bytes_given = false;  // dataset.item_bytes set: not with a sequence, whose shape sets the bytes

  {
    ObjectReader r = top.object("node");
    s.node.gpus = static_cast<int>(r.integer("gpus", 1, Range::between(1, 64)));
    s.node.cpu_cores = static_cast<int>(r.integer("cpu_cores", profile.cpu.cores, Range::between(1, 4096)));
    r.finish();
  }
  {
    ObjectReader r = top.object("cluster");
    s.cluster.nodes = static_cast<int>(r.integer("nodes", 1, Range::between(1, 100000)));
    s.cluster.inter_node_bus_bytes_per_s = r.number("inter_node_bus_bytes_per_s", 0.0, Range::between(0.0, 1e13));
    s.cluster.inter_node_latency_s = r.number("inter_node_latency_s", -1.0, Range::between(0.0, 1.0));
    s.cluster.simulated_nodes = static_cast<int>(r.integer("simulated_nodes", 1, Range::between(1, kMaxSimulatedNodes)));
    if (s.cluster.simulated_nodes > s.cluster.nodes)
      r.fail("simulated_nodes", *r.raw("simulated_nodes"),
             "at most cluster.nodes (" + std::to_string(s.cluster.nodes) + "): the nodes of the job the simulator runs");
    r.finish();
  }
  {
    ObjectReader r = top.object("dataset");
    s.dataset.num_samples = r.integer("num_samples", s.dataset.num_samples, Range::between(1, 1e15));
    s.dataset.sample_bytes = read_distribution(r, "sample_bytes", s.dataset.sample_bytes, Range::bytes());
    item_bytes_given = r.has("item_bytes");
    s.dataset.item_bytes = r.number("item_bytes", s.dataset.item_bytes, Range::bytes());
    s.dataset.load_s_per_sample = read_distribution(r, "load_s_per_sample", s.dataset.load_s_per_sample, Range::seconds());
    s.dataset.samples_per_file = r.integer("samples_per_file", 1, Range::between(1, 1e15));
    for (auto& q : r.array_of_objects("load_speed_vs_busy_cores")) {
      const double busy = q.required_number("busy_cores", Range::at_least(1));
      const double speed = q.required_number("relative_speed", {0.0, 10.0, true});
      q.finish();
      s.dataset.load_speed_vs_busy_cores.push_back({busy, speed});
    }
    std::sort(s.dataset.load_speed_vs_busy_cores.begin(), s.dataset.load_speed_vs_busy_cores.end(),
              [](const SpeedPoint& a, const SpeedPoint& b) { return a.busy_cores < b.busy_cores; });
    r.finish();
  }
  bool fill_cpu_given = false;  // the scenario set storage.buffered_read_cpu_s_per_byte itself
  {
    ObjectReader r = top.object("storage");
    s.storage.page_cache_hit_ratio = r.number("page_cache_hit_ratio", 1.0, Range::unit_interval());
    s.storage.device_bandwidth_from =
        r.choice("device_bandwidth_from", "fio", {"fio", "fio_or_buffered_peak"}) == "fio_or_buffered_peak"
            ? DeviceBandwidthFrom::kFioOrBufferedPeak
            : DeviceBandwidthFrom::kFio;
    // buffered readers can draw more from the device than fio's O_DIRECT sequential read (validation run 51, finding 3)
    const double profile_bandwidth = s.storage.device_bandwidth_from == DeviceBandwidthFrom::kFioOrBufferedPeak
                                         ? std::max(profile.storage.read_bytes_per_s,
                                                    profile.storage.buffered_peak_bytes_per_s)
                                         : profile.storage.read_bytes_per_s;
    s.storage.read_bytes_per_s = r.number("read_bytes_per_s", profile_bandwidth, Range::bytes_per_s());
    s.storage.read_iops = r.number("read_iops", profile.storage.read_iops, Range::operations_per_s());
    // a cold file's fixed cost where calibrate measured one (its small files), else fio's per-request latency
    s.storage.read_latency_s = r.number(
        "read_latency_s", std::max(profile.storage.read_latency_s, profile.storage.cold_file_latency_s),
        Range::between(0, 10));
    s.storage.open_latency_s = r.number("open_latency_s", 0.0, Range::between(0, 10));
    s.storage.metadata_ops_per_s = r.number("metadata_ops_per_s", 0.0, Range::between(0, 1e12));
    s.storage.stream_read_bytes_per_s = read_rate_cap_bytes_per_s(r, "stream_read_bytes_per_s", profile.storage.stream_read_bytes_per_s);
    fill_cpu_given = r.has("buffered_read_cpu_s_per_byte");
    s.storage.buffered_read_cpu_s_per_byte =
        r.number("buffered_read_cpu_s_per_byte", profile.storage.buffered_read_cpu_s_per_byte, Range::between(0, 1e-3));
    s.storage.reader_share_from =
        r.choice("reader_share_from", "back_to_back", {"back_to_back", "with_work"}) == "with_work"
            ? ReaderShareFrom::kWithWork
            : ReaderShareFrom::kBackToBack;
    // with_work where calibrate measured it, else the back-to-back curve (profiles before the seventeenth session)
    s.storage.stream_read_vs_readers =
        s.storage.reader_share_from == ReaderShareFrom::kWithWork &&
                !profile.storage.stream_read_vs_readers_with_work.empty()
            ? profile.storage.stream_read_vs_readers_with_work
            : profile.storage.stream_read_vs_readers;
    s.storage.worker_reads = r.choice("worker_reads", "per_sample", {"per_sample", "per_batch"}) == "per_batch"
                                 ? WorkerReads::kPerBatch
                                 : WorkerReads::kPerSample;
    s.storage.device_share =
        r.choice("device_share", "at_start", {"at_start", "follows_readers"}) == "follows_readers"
            ? DeviceShare::kFollowsReaders
            : DeviceShare::kAtStart;
    s.storage.read_pieces_per_batch =
        static_cast<int>(r.integer("read_pieces_per_batch", 4, Range::between(1, 1 << 24)));
    // the store's capacity, shared evenly by the nodes reading it at once (DESIGN: many nodes against one store)
    s.storage.nodes_sharing = static_cast<int>(r.integer("nodes_sharing", 1, Range::between(1, 1000000)));
    s.storage.read_bytes_per_s /= s.storage.nodes_sharing;
    s.storage.read_iops /= s.storage.nodes_sharing;
    s.storage.metadata_ops_per_s /= s.storage.nodes_sharing;
    r.finish();
  }
  {
    ObjectReader r = top.object("loader");
    s.loader.batch_size = static_cast<int>(r.integer("batch_size", 1, Range::between(1, 1 << 24)));
    s.loader.num_workers = static_cast<int>(r.integer("num_workers", 0, Range::between(0, 1024)));
    const auto prefetch = r.optional_integer("prefetch_factor", Range::between(1, 1024));
    if (prefetch && s.loader.num_workers == 0)
      throw InputError(file, r.path_of("prefetch_factor"), std::to_string(*prefetch),
                       "no prefetch_factor with num_workers=0 (PyTorch raises ValueError: it applies only to worker processes)");
    s.loader.prefetch_factor = static_cast<int>(prefetch.value_or(2));
    s.loader.pin_memory = r.boolean("pin_memory", false);
    s.loader.persistent_workers = r.boolean("persistent_workers", false);
    if (s.loader.persistent_workers && s.loader.num_workers == 0)
      throw InputError(file, r.path_of("persistent_workers"), "true",
                       "false with num_workers=0 (PyTorch raises ValueError: persistent_workers needs num_workers > 0)");
    s.loader.drop_last = r.boolean("drop_last", false);
    s.loader.in_order = r.boolean("in_order", true);
    s.loader.worker_start_s = r.number("worker_start_s", s.loader.worker_start_s, Range::between(0, 3600));
    s.loader.collate_s_per_batch = r.optional_number("collate_s_per_batch", Range::between(0, 3600));
    s.loader.collate_in_shared_memory = r.boolean("collate_in_shared_memory", false);
    s.loader.worker_s_per_batch = r.number("worker_s_per_batch", 0.0, Range::between(0, 3600));
    s.loader.worker_put_share = r.number("worker_put_share", LoaderConfig::kDefaultWorkerPutShare, Range::between(0, 1));
    s.loader.worker_turnaround_share = r.number("worker_turnaround_share", 1.0, Range::between(0, 1));
    s.loader.pin_thread_wait_s_per_batch = r.number("pin_thread_wait_s_per_batch", 0.0, Range::between(0, 3600));
    s.loader.main_next_s_per_batch = r.number("main_next_s_per_batch", 0.0, Range::between(0, 60));
    if (r.has("slow_worker")) {
      ObjectReader slow = r.object("slow_worker");
      const double max_index = std::max(0, s.loader.num_workers - 1);
      if (s.loader.num_workers == 0)
        throw InputError(file, r.path_of("slow_worker"), "an object", "no slow_worker with num_workers=0");
      s.loader.slow_worker = static_cast<int>(slow.integer("worker", 0, Range::between(0, max_index)));
      s.loader.slow_worker_factor = slow.required_number("factor", {0.0, 1e6, true});
      s.loader.slow_worker_holds_gil = slow.boolean("holds_gil", false);
      slow.finish();
    } else {
      r.raw("slow_worker");
    }
    for (auto& q : r.array_of_objects("replay_worker_batches")) {
      if (s.loader.num_workers == 0)
        throw InputError(file, r.path_of("replay_worker_batches"), "an array", "no replay with num_workers=0");
      const auto w = static_cast<std::size_t>(q.integer("worker", 0, Range::between(0, s.loader.num_workers - 1)));
      const json* times = q.raw("batch_s");
      if (!times || !times->is_array() || times->empty()) q.fail("batch_s", times ? *times : json(), "a non-empty array of seconds");
      if (s.loader.replay_batch_s.size() <= w) s.loader.replay_batch_s.resize(w + 1);
      auto& out = s.loader.replay_batch_s[w];
      for (std::size_t i = 0; i < times->size(); ++i) {
        const json& t = (*times)[i];
        if (!t.is_number() || t.get<double>() <= 0.0 || t.get<double>() > 3600.0)
          throw InputError(file, q.path_of("batch_s") + "[" + std::to_string(i) + "]", t.dump(), "seconds in (0, 3600]");
        out.push_back(t.get<double>());
      }
      q.finish();
    }
    r.finish();
  }
  // Workers are processes: where calibrate read cold by forked processes, they pay that fill CPU (the nearest
  // process count's), not the one thread's (validation-runs.md run 47, finding 5). A scenario's own figure stands.
  if (!fill_cpu_given && s.loader.num_workers > 0)
    s.storage.buffered_read_cpu_s_per_byte =
        worker_fill_cpu_s_per_byte(profile.storage, s.loader.num_workers, s.storage.buffered_read_cpu_s_per_byte);
  {
    ObjectReader r = top.object("transfer");
    s.transfer.non_blocking = r.boolean("non_blocking", false);
    s.transfer.copy_stream = r.choice("copy_stream", "default", {"default", "side"}) == "side" ? CopyStream::kSide
                                                                                              : CopyStream::kDefault;
    s.transfer.copy_call_s_per_batch = r.number("copy_call_s_per_batch", 0.0, Range::between(0, 60));
    r.finish();
  }
  {
    ObjectReader r = top.object("training");
    const auto step = r.optional_number("step_s", Range::between(0, 3600));
    const auto forward = r.optional_number("forward_s", Range::between(0, 3600));
    const auto backward = r.optional_number("backward_s", Range::between(0, 3600));
    if (forward.has_value() != backward.has_value())
      throw InputError(file, r.path_of(forward ? "backward_s" : "forward_s"), "nothing",
                       "forward_s and backward_s given together");
    if (forward) {
      if (*forward + *backward <= 0)
        throw InputError(file, r.path_of("forward_s"), std::to_string(*forward), "forward_s + backward_s > 0");
      if (step && std::fabs(*step - (*forward + *backward)) > 1e-9 * std::max(1.0, *step))
        throw InputError(file, r.path_of("step_s"), show_value(*step),
                         "step_s equal to forward_s + backward_s, or left out");
      s.training.forward_s = *forward;
      s.training.backward_s = *backward;
      s.training.split_given = true;
    } else {
      if (!step) throw InputError(file, r.path_of("step_s"), "nothing", "a number > 0 (required: the synthetic-data step time)");
      if (*step <= 0) throw InputError(file, r.path_of("step_s"), show_value(*step), "a number > 0");
      // Backward is about twice the forward for typical networks.
      s.training.forward_s = *step / 3.0;
      s.training.backward_s = *step - s.training.forward_s;
    }
    const bool duty_given = r.has("step_s_vs_gpu_duty");  // [] says: no duty dependence
    for (auto& q : r.array_of_objects("step_s_vs_gpu_duty")) {
      const double duty = q.required_number("duty", Range::unit_interval());
      const double t = q.required_number("step_s", Range::positive());
      q.finish();
      s.training.step_s_vs_gpu_duty.push_back({duty, t});
    }
    std::sort(s.training.step_s_vs_gpu_duty.begin(), s.training.step_s_vs_gpu_duty.end(),
              [](const DutyPoint& a, const DutyPoint& b) { return a.duty < b.duty; });
    if (!duty_given) s.training.step_s_vs_gpu_duty = duty_curve_from_profile(s.training.step_s(), profile.compute);
    // a curve from the profile comes with calibrate's time constant where it measured one
    const double tau_default = !duty_given && !s.training.step_s_vs_gpu_duty.empty() && profile.compute.gpu_duty_time_constant_s
                                   ? *profile.compute.gpu_duty_time_constant_s
                                   : kGpuDutyTimeConstantS;
    s.training.gpu_duty_time_constant_s =
        r.number("gpu_duty_time_constant_s", tau_default, Range::between(0.001, 3600));
    if (r.has("gpu_clock_humps")) {
      ObjectReader h = r.object("gpu_clock_humps");
      GpuClockHumps& humps = s.training.gpu_clock_humps;
      humps.period_s = h.number("period_s", 1.0, Range::between(0.001, 3600));
      humps.high_share = h.required_number("high_share", {0.0, 1.0, true});
      if (humps.high_share >= 1.0) h.fail("high_share", humps.high_share, "a number in (0, 1)");
      for (auto& q : h.array_of_objects("amplitude_vs_gpu_duty")) {
        const double duty = q.required_number("duty", Range::unit_interval());
        // the low level, 1 - amplitude x high_share, must stay above 0
        const double amplitude = q.required_number("amplitude", Range::non_negative());
        if (amplitude * humps.high_share >= 1.0)
          q.fail("amplitude", amplitude, "a number >= 0 below 1 / high_share (the low level above 0)");
        q.finish();
        humps.amplitude_vs_gpu_duty.push_back({duty, amplitude});
      }
      std::sort(humps.amplitude_vs_gpu_duty.begin(), humps.amplitude_vs_gpu_duty.end(),
                [](const HumpPoint& a, const HumpPoint& b) { return a.duty < b.duty; });
      h.finish();
    }
    s.training.step_cv = r.number("step_cv", 0.0, Range::between(0, 10));
    s.training.host_s_per_step = r.number("host_s_per_step", 0.0, Range::between(0, 3600));
    s.training.back_to_back_host_factor = r.number("back_to_back_host_factor", 1.0, Range::between(0.05, 2));
    s.training.host_needs_memory_map = r.boolean("host_needs_memory_map", false);
    s.training.memory_map_needs_per_step = r.number("memory_map_needs_per_step", 0.0, Range::between(0, 1e6));
    s.training.memory_map_wait_s = r.number("memory_map_wait_s", 0.0, Range::between(0, 1));
    s.training.launch_tail_s = r.number("launch_tail_s", 0.0, Range::between(0, 60));
    s.training.gpu_decode_s_per_sample = r.number("gpu_decode_s_per_sample", 0.0, Range::between(0, 1));
    s.training.gpu_decode_host_s_per_sample = r.number("gpu_decode_host_s_per_sample", 0.0, Range::between(0, 1));
    s.training.sync_every_steps = static_cast<int>(r.integer("sync_every_steps", 0, Range::between(0, 1 << 30)));
    s.training.max_steps_ahead = static_cast<int>(r.integer("max_steps_ahead", 2, Range::between(1, 1 << 20)));
    s.training.steps = r.integer("steps", 2000, Range::between(1, kMaxSteps));
    s.training.warmup_steps = r.integer("warmup_steps", s.prefetch_fill_steps(), Range::between(0, 1e9));
    r.finish();
  }
  {
    ObjectReader r = top.object("ddp");
    s.ddp.gradient_bytes = r.number("gradient_bytes", 0.0, Range::between(0.0, 1e15));
    s.ddp.bucket_cap_mb = r.number("bucket_cap_mb", 25.0, Range::positive());
    s.ddp.first_bucket_mb = r.number("first_bucket_mb", 1.0, Range::positive());
    if (const json* params = r.raw("parameter_bytes")) {
      // [b0, b1, ...] in backward order, or {"count": N, "bytes": B} for N equal parameters
      const std::string expected = "an array of gradient sizes in bytes (backward order) or {\"count\": N, \"bytes\": B}";
      if (params->is_array()) {
        if (params->empty() || params->size() > 1000000) r.fail("parameter_bytes", *params, expected + ", 1 to 1,000,000 of them");
        for (std::size_t i = 0; i < params->size(); ++i) {
          const json& b = (*params)[i];
          if (!b.is_number() || !(b.get<double>() > 0.0) || !std::isfinite(b.get<double>()))
            throw InputError(file, r.path_of("parameter_bytes") + "[" + std::to_string(i) + "]", show_value(b), "a number > 0");
          s.ddp.parameter_bytes.push_back(b.get<double>());
        }
      } else if (params->is_object()) {
        ObjectReader q = r.object("parameter_bytes");
        const auto count = q.integer("count", 1, Range::between(1, 1000000));
        const double bytes = q.required_number("bytes", Range::positive());
        q.finish();
        s.ddp.parameter_bytes.assign(static_cast<std::size_t>(count), bytes);
      } else {
        r.fail("parameter_bytes", *params, expected);
      }
      double total = 0.0;
      for (double b : s.ddp.parameter_bytes) total += b;
      if (!r.has("gradient_bytes")) {
        s.ddp.gradient_bytes = total;
      } else if (std::fabs(total - s.ddp.gradient_bytes) > 1e-6 * total) {
        throw InputError(file, r.path_of("gradient_bytes"), show_value(s.ddp.gradient_bytes),
                         "the sum of ddp.parameter_bytes (" + show_value(total) + "), or left out");
      }
    }
    s.ddp.host_s_per_step = r.number("host_s_per_step", 0.0, Range::between(0, 60));
    s.ddp.host_s_per_bucket = r.number("host_s_per_bucket", 0.0, Range::between(0, 1));
    s.ddp.host_s_per_parameter = r.number("host_s_per_parameter", 0.0, Range::between(0, 1));
    if (s.ddp.host_s_per_parameter > 0.0 && s.ddp.parameter_bytes.empty())
      r.fail("host_s_per_parameter", r.raw("host_s_per_parameter") ? *r.raw("host_s_per_parameter") : json(),
             "0 unless ddp.parameter_bytes gives the parameter tensors it applies to");
    r.finish();
  }
  if (top.has("sequence")) read_sequence(top, s, item_bytes_given);
  if (top.has("fsdp")) read_fsdp(top, s);
  top.finish();
  if (const auto missing = missing_inter_node_figures(s, profile))
    throw InputError(file, "cluster.nodes", std::to_string(s.cluster.nodes),
                     "1, or the network's figures for the " + *missing +
                         " across nodes: cluster.inter_node_bus_bytes_per_s (nccl-tests' busbw on a run across nodes), "
                         "or the profile's nccl.inter_node (calibrate/validation/nccl_tests_fit.py reads nccl-tests' output)");
  if (s.all_reduces_gradients()) {
    // Each bucket is a simulated collective per step: keep their number sane.
    const double buckets = s.ddp.parameter_bytes.empty() ? 1.0 + s.ddp.gradient_bytes / (s.ddp.bucket_cap_mb * 1048576.0)
                                                         : static_cast<double>(s.ddp.bucket_bytes().size());
    if (buckets > kMaxBucketsPerStep)
      throw InputError(file, "ddp.bucket_cap_mb", show_value(s.ddp.bucket_cap_mb),
                       "a cap giving at most " + std::to_string(kMaxBucketsPerStep) + " buckets per step (ddp.gradient_bytes / " +
                           std::to_string(kMaxBucketsPerStep) + " / 1048576 MiB or more)");
  }
  if (s.batches_per_epoch() == 0)
    throw InputError(file, "dataset.num_samples", std::to_string(s.dataset.num_samples),
                     "at least loader.batch_size x node.gpus x cluster.nodes samples with drop_last=true (otherwise an epoch has no batch)");
  return s;
}

}  // namespace pipeplan
