// Running simulations for the commands: one in this process (simulate_once), or several in forked
// children. SimGrid allows one simulation per process, so every command that runs more than one (a
// sweep's points, a simulation's replications) forks one child per run, at most `parallel` at once;
// each child writes its JSON report (and, when asked, its text report and a trace) to files the
// parent reads back.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/profile.hpp"
#include "models/scenario.hpp"

namespace pipeplan::cli {

struct ForkedRun {
  Scenario scenario;
  std::string trace_path;  // empty: no trace
};

struct ForkedReport {
  nlohmann::json report;  // sim::to_json
  std::string text;       // sim::to_text, when asked
};

// One simulation in this process: its JSON report, its text report when asked, and its trace
// written when the run names a path. Throws std::runtime_error when the trace cannot be written.
ForkedReport simulate_once(const ForkedRun& run, const Profile& profile, long long steps, bool want_text);

// A sweep's or recommend's point measured in steady state: where its workers and prefetch hold more batches than
// the scenario's warmup leaves out (prefetch_factor x num_workers + 2, the scenario reader's default warmup), the
// warmup grows to that fill and the steps by as much (at least twice the fill: the simulator caps the warmup at
// half the steps), so the point is not measured while its first fill drains. `steps_override` > 0 (--steps)
// replaces the scenario's steps first. Validation run 27's pin-bound tensor case, 218 steps with a warmup of 18: 8
// -> 48 workers read +21% that way and -5% over 3,000 steps.
Scenario with_steady_window(Scenario scenario, long long steps_override);

// The scenario with seeds S..S+replications-1 (S its own seed), no traces.
std::vector<ForkedRun> seed_runs(const Scenario& scenario, int replications);

// Runs every simulation; throws std::runtime_error naming the first run that failed (its
// children's messages are on stderr). `steps` 0: each scenario's own.
std::vector<ForkedReport> simulate_forked(const std::vector<ForkedRun>& runs, const Profile& profile, long long steps,
                                          int parallel, bool want_text);

}  // namespace pipeplan::cli
