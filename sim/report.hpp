// Turning a SimResult into the diagnosis: which stage sets the pace and why, in the terms
// a user would use, as the contract's JSON and as text for people.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/profile.hpp"
#include "models/scenario.hpp"
#include "sim/simulation.hpp"

namespace pipeplan::sim {

struct Diagnosis {
  std::string stage;
  std::string explanation;
  std::string suggestion;  // a setting to try, from the analytic model; confirm it with `pipeplan sweep`
  bool head_of_line = false;  // worker-bound with idle workers behind a slow batch (in-order hand-off)
  bool main_thread_full = false;  // pin_memory=False: receive + staged copy + Python fill the loop's thread
  bool rank_imbalance = false;    // the GPUs wait at the collectives for a rank whose step runs longer
};

// A share of the window spent building kernel plans for new batch shapes worth naming pad_to_multiple_of for (the
// diagnosis's suggestion; recommend tries the knob from there even at the synthetic-data rate).
inline constexpr double kNewShapeFractionWorthNaming = 0.05;

// Fills stage capacities from the analytic model (in place) and names the bottleneck.
Diagnosis diagnose(SimResult& result, const Scenario& scenario, const Profile& profile);

nlohmann::json to_json(const SimResult& result, const Diagnosis& diagnosis, const Scenario& scenario, const Profile& profile);
std::string to_text(const SimResult& result, const Diagnosis& diagnosis, const Scenario& scenario, const Profile& profile);

// What to try for a bottleneck `stage`, estimated with the analytic model (models/analytic.cpp).
std::string suggest(const std::string& stage, const Scenario& scenario, const Profile& profile);

// 1234567.8 -> "1,234,568"
std::string with_thousands(double value);

}  // namespace pipeplan::sim
