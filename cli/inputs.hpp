// Reading the inputs every simulating command shares: the profile (with the bundled default
// as fallback) and the scenario (a file or the bundled default, with --set overrides).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/profile.hpp"
#include "models/scenario.hpp"

namespace pipeplan::cli {

// PATH empty: the bundled default profile. Throws InputError.
Profile load_profile(const std::string& path);

// The scenario document (PATH empty: the bundled default) with `sets` applied. Throws InputError.
nlohmann::json load_scenario_document(const std::string& path, const std::vector<std::string>& sets);

std::string scenario_path_or_default(const std::string& path);

// Refuses (InputError) a run whose simulated work would take far longer than a minute.
// `steps` 0: the scenario's own.
void check_simulation_size(const Scenario& scenario, long long steps);

}  // namespace pipeplan::cli
