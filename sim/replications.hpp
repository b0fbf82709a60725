// One scenario simulated with several seeds: what the runs agree on and how far they spread.
// A simulated window of a few hundred steps is one draw of a random process (sample costs, the
// cores' wander correlated over a second): on validation run 9's cases, six seeds of the same
// scenario spread by up to 12% in throughput. The mean over seeds is the expectation, the
// spread says how far one run (or one measured job) can land from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipeplan::sim {

// reports: sim::to_json of each run, in seed order; seeds: the seed of each. Returns
// {"n", "seeds", "samples_per_s": {mean, min, max, cv}, "step_time_s": {"mean": {...}, "p90": {...}},
//  "bottleneck_votes": {stage: count},
//  "by_bottleneck": {stage: {"n", "samples_per_s": {...}, "step_time_p90_s": {...}}}} (the runs naming each stage:
// where seeds split, each regime's own figures); cv is the sample standard deviation over the mean (0 for one run).
// Where every seed names the same stage but their p90 steps fall in two groups at least 1.5x apart (two_group_split,
// two seeds a side), also "p90_regimes": [{"n", "samples_per_s", "step_time_p90_s"}, ...], the short-step group
// first: a loop that settles into either of two regimes (validation run 71, finding 2: the in-order straggler whose
// receive meets its GIL or not).
nlohmann::json replication_summary(const std::vector<nlohmann::json>& reports, const std::vector<std::uint64_t>& seeds);

// Pure: where values sorted ascending fall into two groups: the index i (1..n-1) of the widest ratio gap
// sorted[i] / sorted[i-1], when that ratio is at least min_ratio and each side holds at least min_side values;
// 0 when there is no such split (or a value is not positive).
std::size_t two_group_split(const std::vector<double>& sorted, double min_ratio, std::size_t min_side);

// One paragraph for the text report.
std::string replication_text(const nlohmann::json& summary);

}  // namespace pipeplan::sim
