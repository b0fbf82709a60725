// pipeplan recommend [SCENARIO.json] [--profile P] [--steps N] [--seed S] [--set K=V]... [--replications R]
//                    [--max-changes N] [--knobs K1,K2] [--jobs J] [--format text|json] [-o OUT]
//
// Which of PyTorch's input-pipeline knobs to change, and by how much it would help: a greedy search over
// one-knob changes (num_workers, prefetch_factor, pin_memory, non_blocking, the copy stream,
// persistent_workers, in_order, DDP's bucket_cap_mb, FSDP's backward_prefetch and reshard_after_forward), each point
// simulated with R seeds. Each round
// takes the change that raises the mean throughput most, when it does so by more than kMinGain and by
// more than twice the seeds' standard error; it stops when none does, when the job runs within kMinGain of
// its synthetic-data rate (the GPU sets the pace), or after --max-changes. A worker count it raised is
// then trimmed to the fewest workers within kMinGain of the same rate: more workers only add CPU
// contention and memory. Knobs that change what the job computes (batch_size, the model, a sync the loop
// reads) are never moved: the report's suggestion names those. --knobs narrows the search to some of the knobs
// (a job whose CPU budget fixes num_workers asks what else helps). Last, one more round from the recommended
// point looks for a change that keeps its rate and cuts its p90 step time (steadier steps: validation run 54's
// straggler, whose in-order loader waited for it once a round, ran with a p90 step 4.7x shorter with
// in_order=False); it is reported beside the recommendation, not folded into it.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/forked.hpp"
#include "cli/inputs.hpp"
#include "models/input_error.hpp"
#include "sim/replications.hpp"
#include "sim/report.hpp"

namespace po = boost::program_options;

namespace pipeplan::cli {

namespace {

// A change smaller than this is not worth a user's edit (and sits inside a real job's run-to-run noise:
// docs/validation.md measures the same setting 10% apart, median over repeats).
constexpr double kMinGain = 0.02;
// A cut of the p90 step time worth naming when the rate stays: a quarter, well beyond the 5% cv of one prediction's
// p90 over its seeds (docs/validation.md, the prediction's own spread).
constexpr double kMinStepCut = 0.25;

struct Point {
  std::vector<std::string> sets;  // KEY=VALUE on top of the scenario (and its --set)
  double samples_per_s = 0.0;     // mean over the seeds
  double se_rel = 0.0;            // standard error of that mean, relative
  double step_p90_s = 0.0;        // the p90 step time, mean over the seeds
  double step_p90_se_rel = 0.0;   // standard error of that mean, relative
  nlohmann::json first;           // the first seed's report
};

// A point to simulate: `sets` on top of the scenario, nothing measured yet.
Point point_at(std::vector<std::string> sets) {
  Point p;
  p.sets = std::move(sets);
  return p;
}

std::string key_of(const std::string& assignment) { return assignment.substr(0, assignment.find('=')); }
std::string value_of(const std::string& assignment) { return assignment.substr(assignment.find('=') + 1); }

// `sets` with KEY=VALUE replacing any earlier value of KEY.
std::vector<std::string> with(std::vector<std::string> sets, const std::string& assignment) {
  const std::string key = key_of(assignment);
  sets.erase(std::remove_if(sets.begin(), sets.end(), [&](const std::string& a) { return key_of(a) == key; }),
             sets.end());
  sets.push_back(assignment);
  return sets;
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

// Every key moves() may change (--help and the --knobs error list them from here).
const std::vector<std::string>& knob_keys() {
  static const std::vector<std::string> keys{"loader.num_workers",     "loader.prefetch_factor", "loader.pin_memory",
                                             "loader.persistent_workers", "loader.in_order",     "transfer.non_blocking",
                                             "transfer.copy_stream",   "ddp.bucket_cap_mb",
                                             "fsdp.backward_prefetch", "fsdp.reshard_after_forward",
                                             "sequence.pad_to_multiple_of", "sequence.warm_up_shapes"};
  return keys;
}

// --knobs' comma-separated keys, each one of knob_keys(); empty text: all of them.
std::set<std::string> parse_knobs(const std::string& text) {
  const auto& keys = knob_keys();
  if (text.empty()) return {keys.begin(), keys.end()};
  std::set<std::string> out;
  std::stringstream in(text);
  for (std::string key; std::getline(in, key, ',');) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string expected = "comma-separated keys among";
      for (const auto& k : keys) expected += " " + k;
      throw InputError("", "--knobs", key.empty() ? "(empty)" : key, expected);
    }
    out.insert(key);
  }
  return out;
}

// The one-knob changes worth simulating from scenario `s`, as KEY=VALUE.
std::vector<std::string> moves(const Scenario& s) {
  std::vector<std::string> out;
  const int n = s.loader.num_workers;
  const int limit = std::max(4 * s.node.cpu_cores / std::max(1, s.node.gpus), n + 1);
  std::set<int> workers{n - 2, n / 2, n + 2, n + 4, 2 * n, 3 * n};
  if (n == 0) workers.insert({1, 2, 4, 8});
  // From workers to none (loading in the loop's own thread) is not one knob: PyTorch then rejects prefetch_factor
  // and persistent_workers, which the scenario may set, and it rarely helps; a sweep can still try it.
  const int fewest = n > 0 ? 1 : 0;
  for (int w : workers)
    if (w >= fewest && w <= limit && w != n) out.push_back("loader.num_workers=" + std::to_string(w));
  if (n > 0) {
    for (int pf : {2, 4, 8})
      if (pf != s.loader.prefetch_factor) out.push_back("loader.prefetch_factor=" + std::to_string(pf));
    if (!s.loader.persistent_workers) out.push_back("loader.persistent_workers=true");
    if (s.loader.in_order && n > 1) out.push_back("loader.in_order=false");
  }
  out.push_back("loader.pin_memory=" + bool_text(!s.loader.pin_memory));
  if (!s.transfer.non_blocking) out.push_back("transfer.non_blocking=true");
  if (s.transfer.copy_stream == CopyStream::kDefault && s.loader.pin_memory && s.transfer.non_blocking)
    out.push_back("transfer.copy_stream=side");
  if (s.all_reduces_gradients())
    for (int cap : {10, 25, 50, 100})
      if (std::abs(cap - s.ddp.bucket_cap_mb) > 1e-9) out.push_back("ddp.bucket_cap_mb=" + std::to_string(cap));
  if (s.shards_parameters()) {
    if (s.fsdp.backward_prefetch != FsdpBackwardPrefetch::kBackwardPre) out.push_back("fsdp.backward_prefetch=backward_pre");
    if (s.fsdp.reshard_after_forward) out.push_back("fsdp.reshard_after_forward=false");
  }
  // Batches padded to their longest meet new shapes, each a plan build on the host (validation run 63): rounding the
  // padded length trades more padding for fewer shapes; only worth trying where new shapes cost something.
  const bool padded_to_longest =
      s.sequence.collate == SequenceCollate::kPadToLongest || s.sequence.collate == SequenceCollate::kBucket;
  if (s.sequence.enabled && padded_to_longest && s.sequence.new_shape_host_s > 0.0)
    for (int m : {8, 64, 256})
      if (m != s.sequence.pad_to_multiple_of) out.push_back("sequence.pad_to_multiple_of=" + std::to_string(m));
  // or every shape's plans built before the job (a bounded set of padded lengths only)
  if (s.sequence.enabled && s.sequence.new_shape_host_s > 0.0 && !s.sequence.warm_up_shapes &&
      warm_up_possible(s.sequence))
    out.push_back("sequence.warm_up_shapes=true");
  return out;
}

// The points one allowed knob's move away from `sets` (moves(), narrowed to --knobs), not yet simulated.
std::vector<Point> one_knob_points(const CommonOptions& common, const Profile& profile,
                                   const std::vector<std::string>& sets, const std::set<std::string>& knobs) {
  std::vector<Point> out;
  for (const auto& move : moves(load_scenario(common, profile, sets)))
    if (knobs.count(key_of(move))) out.push_back(point_at(with(sets, move)));
  return out;
}

// Simulates each point's scenario with `replications` seeds (validated first: bad input before any run).
void evaluate(std::vector<Point>& points, const CommonOptions& common, const Profile& profile, int replications,
              int jobs) {
  std::vector<ForkedRun> runs;
  for (const auto& p : points)
    for (auto& run : seed_runs(with_steady_window(load_scenario(common, profile, p.sets), common.steps), replications))
      runs.push_back(std::move(run));
  const auto reports = simulate_forked(runs, profile, 0, jobs, false);  // each point's steps: with_steady_window
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<nlohmann::json> seeds_reports;
    std::vector<std::uint64_t> seeds;
    for (int k = 0; k < replications; ++k) {
      seeds_reports.push_back(reports[i * replications + k].report);
      seeds.push_back(runs[i * replications + k].scenario.seed);
    }
    const auto summary = sim::replication_summary(seeds_reports, seeds);  // as sweep ranks its points
    const auto& rate = summary["samples_per_s"];
    const auto& p90 = summary["step_time_s"]["p90"];
    points[i].samples_per_s = rate["mean"].get<double>();
    points[i].se_rel = rate["cv"].get<double>() / std::sqrt(static_cast<double>(replications));
    points[i].step_p90_s = p90["mean"].get<double>();
    points[i].step_p90_se_rel = p90["cv"].get<double>() / std::sqrt(static_cast<double>(replications));
    points[i].first = seeds_reports.front();
  }
}

// Whether `b` beats `a` by more than kMinGain and by more than twice their means' combined standard error.
bool clearly_better(const Point& a, const Point& b) {
  const double gain = b.samples_per_s / a.samples_per_s - 1.0;
  return gain > std::max(kMinGain, 2.0 * std::hypot(a.se_rel, b.se_rel));
}

// Whether `b` keeps `a`'s rate (not clearly slower: within kMinGain or the seeds' noise) and cuts its p90 step time
// by more than kMinStepCut and by more than twice their means' combined standard error.
bool clearly_steadier(const Point& a, const Point& b) {
  if (a.step_p90_s <= 0.0 || clearly_better(b, a)) return false;
  const double cut = 1.0 - b.step_p90_s / a.step_p90_s;
  return cut > std::max(kMinStepCut, 2.0 * std::hypot(a.step_p90_se_rel, b.step_p90_se_rel));
}

// The value of one of moves()' keys in `s`, as --set writes it.
std::string knob_value(const Scenario& s, const std::string& key) {
  if (key == "loader.num_workers") return std::to_string(s.loader.num_workers);
  if (key == "loader.prefetch_factor") return std::to_string(s.loader.prefetch_factor);
  if (key == "loader.persistent_workers") return bool_text(s.loader.persistent_workers);
  if (key == "loader.in_order") return bool_text(s.loader.in_order);
  if (key == "loader.pin_memory") return bool_text(s.loader.pin_memory);
  if (key == "transfer.non_blocking") return bool_text(s.transfer.non_blocking);
  if (key == "transfer.copy_stream") return s.transfer.copy_stream == CopyStream::kSide ? "side" : "default";
  if (key == "fsdp.backward_prefetch")
    return s.fsdp.backward_prefetch == FsdpBackwardPrefetch::kBackwardPre    ? "backward_pre"
           : s.fsdp.backward_prefetch == FsdpBackwardPrefetch::kBackwardPost ? "backward_post"
                                                                             : "none";
  if (key == "fsdp.reshard_after_forward") return bool_text(s.fsdp.reshard_after_forward);
  if (key == "sequence.pad_to_multiple_of") return std::to_string(s.sequence.pad_to_multiple_of);
  if (key == "sequence.warm_up_shapes") return bool_text(s.sequence.warm_up_shapes);
  if (key == "ddp.bucket_cap_mb") {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s.ddp.bucket_cap_mb);
    return buf;
  }
  return "?";
}

// What a recommended change does beyond speed, for the knobs whose change a user should weigh (PyTorch's
// documented semantics); empty where there is nothing to weigh.
std::string caveat(const std::string& assignment) {
  const std::string key = key_of(assignment), value = value_of(assignment);
  if (key == "loader.in_order" && value == "false")
    return "in_order=False hands batches over as they finish, not in the sampler's order: runs are no longer "
           "reproducible batch for batch";
  if (key == "loader.persistent_workers" && value == "true")
    return "persistent_workers=True keeps the worker processes (and what each holds in memory) alive between epochs";
  if (key == "loader.pin_memory" && value == "true")
    return "pin_memory=True page-locks each batch in host memory until it is copied (prefetch_factor x num_workers "
           "batches at most)";
  if (key == "fsdp.reshard_after_forward" && value == "false")
    return "reshard_after_forward=False (SHARD_GRAD_OP) keeps each unit's gathered parameters from forward to backward: "
           "the whole model's parameters stay unsharded on every GPU for the step";
  if (key == "sequence.pad_to_multiple_of")
    return "pad_to_multiple_of=" + value + " (DataCollatorWithPadding) pads each batch further, to a multiple of " + value +
           " tokens: the GPU steps on more padding, the step meets fewer new shapes";
  if (key == "sequence.warm_up_shapes" && value == "true")
    return "warm_up_shapes=true: before training, one step on a dummy batch of each shape the job can meet (every "
           "padded length at the batch's rows) builds every kernel plan once: the report's warm-up line gives its time";
  if (key == "transfer.copy_stream" && value == "side")
    return "copy_stream=side: the step must wait for the copy stream (wait_stream) and each copied tensor "
           "record_stream on the compute stream, or a batch is read before it lands or freed too early";
  return "";
}

// The steadier-steps change as the JSON report gives it (null where none): the knob, its value at the recommended
// point (`from`) and after, both points' rate and p90 step time, and what to weigh.
nlohmann::json steadier_json(const Point* steadier, const Point& current, const std::string& from) {
  if (!steadier) return nullptr;
  const std::string& a = steadier->sets.back();
  return {{"key", key_of(a)}, {"from", from}, {"to", value_of(a)}, {"samples_per_s", steadier->samples_per_s},
          {"gain", steadier->samples_per_s / current.samples_per_s - 1.0},
          {"step_time_p90_s_before", current.step_p90_s}, {"step_time_p90_s", steadier->step_p90_s},
          {"note", caveat(a)}};
}

}  // namespace

int recommend_command(int argc, char** argv) {
  po::options_description options(
      "pipeplan recommend [SCENARIO.json] [options]\n\n"
      "Which input-pipeline knobs to change (num_workers, prefetch_factor, pin_memory, non_blocking, the copy\n"
      "stream, persistent_workers, in_order, DDP's bucket_cap_mb, FSDP's backward_prefetch and\n"
      "reshard_after_forward), one change at a time while one helps by more\n"
      "than 2% and more than the seeds' noise; each point simulated with R seeds. Without SCENARIO, the bundled\n"
      "default scenario.\n\noptions");
  CommonOptions common;
  int jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int replications = 3;
  int max_changes = 4;
  std::string knobs_text;
  std::string knobs_help = "only these may change, comma-separated (default: all):";
  for (const auto& k : knob_keys()) knobs_help += " " + k;
  add_common_options(options, common);
  options.add_options()
      ("replications", po::value(&replications), "seeds per point, their mean compared (default 3)")
      ("max-changes", po::value(&max_changes), "at most this many knobs changed (default 4)")
      ("knobs", po::value(&knobs_text), knobs_help.c_str())
      ("jobs,j", po::value(&jobs), "simulations at once (default: the number of cores)");
  if (!parse_command_line(argc, argv, options, common)) return 0;
  if (jobs < 1 || jobs > 1024) throw InputError("", "--jobs", std::to_string(jobs), "an integer in [1, 1024]");
  if (replications < 1 || replications > 100)
    throw InputError("", "--replications", std::to_string(replications), "an integer in [1, 100]");
  if (max_changes < 1 || max_changes > 10)
    throw InputError("", "--max-changes", std::to_string(max_changes), "an integer in [1, 10]");
  const std::set<std::string> knobs = parse_knobs(knobs_text);

  const Profile profile = load_profile(common.profile_path);
  const std::string scenario_path = scenario_path_or_default(common.positional.empty() ? "" : common.positional[0]);
  std::vector<Point> now{Point{}};
  evaluate(now, common, profile, replications, jobs);
  Point current = now.front();
  const Point start = current;
  const Scenario base = load_scenario(common, profile);
  const int start_workers = base.loader.num_workers;
  std::size_t evaluated = 1;

  struct Change {
    std::string assignment;
    Point after;
  };
  std::vector<Change> changes;
  std::string stopped = "no single change helps by more than 2% and the seeds' noise";
  // The last round's one-knob changes and the point they were taken from: where the search stops there, the
  // steadier-steps round below reads them instead of simulating the same points (same seeds) again.
  std::vector<Point> last_round;
  std::vector<std::string> last_round_from;
  for (int round = 0; round < max_changes; ++round) {
    const double synthetic = current.first["synthetic_baseline"]["samples_per_s"].get<double>();
    // the synthetic-data twin communicates too: a comm-bound job runs at its rate, and only the comm knobs
    // (DDP's buckets, FSDP's prefetch and resharding) can move it
    const bool comm_bound = current.first["bottleneck"]["stage"] == "comm";
    // and it meets the same new batch shapes: a step building plans for them runs at its rate too, and only
    // sequence.pad_to_multiple_of (fewer shapes) moves it
    const bool new_shape_bound =
        current.first.contains("sequence") &&
        current.first["sequence"].value("new_shape_fraction", 0.0) >= sim::kNewShapeFractionWorthNaming;
    if (current.samples_per_s >= (1.0 - kMinGain) * synthetic && !comm_bound && !new_shape_bound) {
      stopped = "the job runs within 2% of its synthetic-data rate: the GPU sets the pace";
      break;
    }
    std::vector<Point> candidates = one_knob_points(common, profile, current.sets, knobs);
    if (candidates.empty()) {
      stopped = "none of the knobs --knobs allows has a move left from here";
      break;
    }
    evaluate(candidates, common, profile, replications, jobs);
    evaluated += candidates.size();
    const Point* best = nullptr;
    for (const auto& c : candidates)
      if (clearly_better(current, c) && (!best || c.samples_per_s > best->samples_per_s)) best = &c;
    if (!best) {
      last_round = std::move(candidates);
      last_round_from = current.sets;
      break;
    }
    // a knob moved again (num_workers 8 -> 16 -> 48) is one change, from its first value to its last
    const auto same = std::find_if(changes.begin(), changes.end(),
                                   [&](const Change& c) { return key_of(c.assignment) == key_of(best->sets.back()); });
    if (same != changes.end()) changes.erase(same);
    changes.push_back({best->sets.back(), *best});
    current = *best;
    if (round + 1 == max_changes) stopped = "--max-changes reached";
  }

  // Fewer workers for the same rate: the smallest count above the start within kMinGain of it.
  const Scenario chosen = load_scenario(common, profile, current.sets);
  std::string trimmed;
  if (chosen.loader.num_workers > start_workers + 1) {
    std::vector<int> counts;
    const int lo = start_workers + 1, hi = chosen.loader.num_workers - 1;
    const int step = std::max(1, (hi - lo + 1 + 11) / 12);  // at most 12 counts
    for (int w = lo; w <= hi; w += step) counts.push_back(w);
    std::vector<Point> fewer;
    for (int w : counts) fewer.push_back(point_at(with(current.sets, "loader.num_workers=" + std::to_string(w))));
    evaluate(fewer, common, profile, replications, jobs);
    evaluated += fewer.size();
    const auto f = std::find_if(fewer.begin(), fewer.end(), [&](const Point& p) {
      return p.samples_per_s >= (1.0 - kMinGain) * current.samples_per_s;
    });
    if (f != fewer.end()) {
      trimmed = "loader.num_workers " + std::to_string(chosen.loader.num_workers) + " -> " + value_of(f->sets.back()) +
                ": the same rate within 2% with fewer workers";
      current = *f;
      // Every row from the worker change on shows its rate at the trimmed count: the changes up to each row
      // simulated again (the last row is the trimmed point itself).
      const auto first = std::find_if(changes.begin(), changes.end(), [](const Change& c) {
        return key_of(c.assignment) == "loader.num_workers";
      });
      if (first != changes.end()) first->assignment = f->sets.back();
      std::vector<Point> prefixes;
      std::vector<std::string> sets;
      for (auto it = changes.begin(); it + 1 < changes.end(); ++it) {
        sets = with(sets, it->assignment);
        if (it >= first) prefixes.push_back(point_at(sets));
      }
      if (!prefixes.empty()) {
        evaluate(prefixes, common, profile, replications, jobs);
        evaluated += prefixes.size();
        for (std::size_t k = 0; k < prefixes.size(); ++k) first[static_cast<std::ptrdiff_t>(k)].after = prefixes[k];
      }
      if (!changes.empty()) changes.back().after = *f;
    }
  }

  // Steadier steps at the same rate: the one-knob change from the recommended point that cuts its p90 step most.
  std::vector<Point> steadier_candidates;
  if (!last_round.empty() && last_round_from == current.sets) {
    steadier_candidates = std::move(last_round);
  } else {
    steadier_candidates = one_knob_points(common, profile, current.sets, knobs);
    evaluate(steadier_candidates, common, profile, replications, jobs);
    evaluated += steadier_candidates.size();
  }
  const Point* steadier = nullptr;
  for (const auto& c : steadier_candidates)
    if (clearly_steadier(current, c) && (!steadier || c.step_p90_s < steadier->step_p90_s)) steadier = &c;
  // the steadier knob's value at the recommended point, as --set writes it
  const std::string steadier_from =
      steadier ? knob_value(load_scenario(common, profile, current.sets), key_of(steadier->sets.back())) : "";

  const double synthetic = current.first["synthetic_baseline"]["samples_per_s"].get<double>();
  std::vector<std::string> final_sets;
  for (const auto& c : changes) final_sets = with(final_sets, c.assignment);
  std::string report;
  if (common.format == "json") {
    nlohmann::json jchanges = nlohmann::json::array();
    double before = start.samples_per_s;
    for (const auto& c : changes) {
      jchanges.push_back({{"key", key_of(c.assignment)}, {"from", knob_value(base, key_of(c.assignment))},
                          {"to", value_of(c.assignment)}, {"samples_per_s", c.after.samples_per_s},
                          {"gain", c.after.samples_per_s / before - 1.0}, {"step_time_p90_s", c.after.step_p90_s},
                          {"bottleneck", c.after.first["bottleneck"]["stage"]}});
      before = c.after.samples_per_s;
    }
    nlohmann::json set = nlohmann::json::object();
    nlohmann::json notes = nlohmann::json::array();
    for (const auto& a : final_sets) {
      set[key_of(a)] = value_of(a);
      if (const std::string note = caveat(a); !note.empty()) notes.push_back(note);
    }
    nlohmann::json out = {
        {"scenario", scenario_path}, {"profile", profile.file}, {"replications", replications},
        {"now", {{"samples_per_s", start.samples_per_s}, {"step_time_p90_s", start.step_p90_s},
                 {"bottleneck", start.first["bottleneck"]["stage"]}}},
        {"changes", jchanges},
        {"recommended", {{"set", set}, {"notes", notes}, {"samples_per_s", current.samples_per_s},
                         {"step_time_p90_s", current.step_p90_s},
                         {"gain", current.samples_per_s / start.samples_per_s - 1.0},
                         {"synthetic_baseline_samples_per_s", synthetic},
                         {"bottleneck", current.first["bottleneck"]["stage"]},
                         {"suggestion", current.first["bottleneck"]["suggestion"]}}},
        {"steadier", steadier_json(steadier, current, steadier_from)},
        {"stopped", stopped}, {"trimmed", trimmed}, {"points_simulated", evaluated},
        {"knobs", nlohmann::json(std::vector<std::string>(knobs.begin(), knobs.end()))}};
    report = out.dump(2) + "\n";
  } else {
    std::ostringstream o;
    char line[512];
    o << "pipeplan recommend: " << chosen.name << " (profile " << profile.file << "), each point the mean of "
      << replications << " seed(s), " << evaluated << " points simulated"
      << (knobs_text.empty() ? "" : ", only " + knobs_text + " moved") << "\n\n";
    std::snprintf(line, sizeof line, "  now%36s %10s samples/s  bottleneck %s\n", "", sim::with_thousands(start.samples_per_s).c_str(),
                  start.first["bottleneck"]["stage"].get<std::string>().c_str());
    o << line;
    double before = start.samples_per_s;
    double p90_before_s = start.step_p90_s;
    int i = 0;
    for (const auto& c : changes) {
      const std::string what = key_of(c.assignment) + " " + knob_value(base, key_of(c.assignment)) + " -> " +
                               value_of(c.assignment);
      std::snprintf(line, sizeof line, "  %d. %-34s %10s samples/s  %+6.1f%%  bottleneck %s\n", ++i, what.c_str(),
                    sim::with_thousands(c.after.samples_per_s).c_str(), 100.0 * (c.after.samples_per_s / before - 1.0),
                    c.after.first["bottleneck"]["stage"].get<std::string>().c_str());
      o << line;
      // a change taken for the rate may also move the tail a lot (in_order=False on a straggler): say so
      if (p90_before_s > 0.0 && std::abs(c.after.step_p90_s / p90_before_s - 1.0) > kMinStepCut) {
        std::snprintf(line, sizeof line, "     and the p90 step time %.1f -> %.1f ms\n", 1e3 * p90_before_s,
                      1e3 * c.after.step_p90_s);
        o << line;
      }
      before = c.after.samples_per_s;
      p90_before_s = c.after.step_p90_s;
    }
    o << "\n";
    if (changes.empty()) {
      o << "  no change: " << stopped << "\n";
    } else {
      std::string sets;
      for (const auto& a : final_sets) sets += " --set " + a;
      std::snprintf(line, sizeof line, "  recommended:%s\n    %s samples/s (%+.1f%%), %.0f%% of the synthetic-data rate (%s)\n",
                    sets.c_str(), sim::with_thousands(current.samples_per_s).c_str(),
                    100.0 * (current.samples_per_s / start.samples_per_s - 1.0), 100.0 * current.samples_per_s / synthetic,
                    sim::with_thousands(synthetic).c_str());
      o << line;
      for (const auto& a : final_sets)
        if (const std::string note = caveat(a); !note.empty()) o << "    note: " << note << "\n";
      o << "  stopped: " << stopped << "\n";
      if (!trimmed.empty()) o << "  trimmed: " << trimmed << "\n";
      std::string vary;
      for (const auto& a : final_sets)
        vary += " --vary " + key_of(a) + "=" + knob_value(base, key_of(a)) + "," + value_of(a);
      o << "  confirm: pipeplan sweep " << (common.positional.empty() ? "" : common.positional[0] + " ") << "--replications "
        << replications << vary << "\n";
    }
    if (steadier) {
      const std::string key = key_of(steadier->sets.back());
      std::snprintf(line, sizeof line,
                    "  steadier: %s %s -> %s keeps the rate (%s samples/s, %+.1f%%) and cuts the p90 step time "
                    "%.1f -> %.1f ms\n",
                    key.c_str(), steadier_from.c_str(),
                    value_of(steadier->sets.back()).c_str(), sim::with_thousands(steadier->samples_per_s).c_str(),
                    100.0 * (steadier->samples_per_s / current.samples_per_s - 1.0), 1e3 * current.step_p90_s,
                    1e3 * steadier->step_p90_s);
      o << line;
      if (const std::string note = caveat(steadier->sets.back()); !note.empty()) o << "    note: " << note << "\n";
    }
    o << "  then: " << current.first["bottleneck"]["suggestion"].get<std::string>() << "\n";
    report = o.str();
  }
  emit_report(common, report);
  return 0;
}

}  // namespace pipeplan::cli
