// Finding the bundled scenarios wherever the binary is built or installed.
#pragma once

#include <string>

namespace pipeplan::cli {

// The scenarios/ folder: beside the install prefix, in the source tree the binary was built
// from, or $PIPEPLAN_SCENARIOS. Empty when none is found.
std::string bundled_scenarios_dir();

std::string default_scenario_path();
std::string default_profile_path();

}  // namespace pipeplan::cli
