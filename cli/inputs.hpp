// Reading the inputs every simulating command shares: the profile (with the bundled default
// as fallback) and the scenario (a file or the bundled default, with --set overrides).
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "models/profile.hpp"
#include "models/scenario.hpp"

namespace pipeplan::cli {

// The options simulate and sweep share, and what they were given.
struct CommonOptions {
  std::vector<std::string> positional;  // the scenario file, at most one
  std::string profile_path;
  std::string format = "text";
  std::string output_path;
  std::vector<std::string> sets;
  long long steps = 0;  // 0: the scenario's
  long long seed = -1;  // -1: the scenario's
};

// Adds --help, --profile, --steps, --seed, --set, --format, --output to `options`.
void add_common_options(boost::program_options::options_description& options, CommonOptions& common);

// Parses argv (with the positional SCENARIO) and validates the common values; returns false
// when --help was asked (the help is printed). Throws InputError or program_options::error.
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        CommonOptions& common);

// The profile, then the scenario with --set, --seed and the size check applied.
Scenario load_scenario(const CommonOptions& common, const Profile& profile, const std::vector<std::string>& extra_sets = {});

// Writes the report to --output (atomically) or stdout.
void emit_report(const CommonOptions& common, const std::string& report);

// PATH empty: the bundled default profile. Throws InputError.
Profile load_profile(const std::string& path);

// The scenario document (PATH empty: the bundled default) with `sets` applied. Throws InputError.
nlohmann::json load_scenario_document(const std::string& path, const std::vector<std::string>& sets);

std::string scenario_path_or_default(const std::string& path);

// Refuses (InputError) a run whose simulated work would take far longer than a minute.
// `steps` 0: the scenario's own.
void check_simulation_size(const Scenario& scenario, long long steps);

}  // namespace pipeplan::cli
