#include "cli/inputs.hpp"

#include <cstdio>

#include "cli/paths.hpp"
#include "models/input_error.hpp"
#include "models/json_reader.hpp"

namespace pipeplan::cli {

Profile load_profile(const std::string& path) {
  const std::string default_path = default_profile_path();
  Profile fallback = parse_profile(read_json_file(default_path), default_path, nullptr);
  if (path.empty() || path == default_path) return fallback;
  return parse_profile(read_json_file(path), path, &fallback);
}

std::string scenario_path_or_default(const std::string& path) { return path.empty() ? default_scenario_path() : path; }

nlohmann::json load_scenario_document(const std::string& path, const std::vector<std::string>& sets) {
  const std::string file = scenario_path_or_default(path);
  nlohmann::json document = read_json_file(file);
  if (!document.is_object()) throw InputError(file, "", show_value(document), "a JSON object (a pipeplan scenario)");
  for (const auto& assignment : sets) apply_override(document, assignment);
  return document;
}

void check_simulation_size(const Scenario& scenario, long long steps) {
  const std::int64_t n = steps > 0 ? steps : scenario.training.steps;
  const double activities = estimated_activities(scenario, n);
  if (activities > kMaxSimulatedActivities) {
    char value[96];
    std::snprintf(value, sizeof value, "%lld steps x %d GPUs (about %.1e activities)", static_cast<long long>(n), scenario.node.gpus,
                  activities);
    throw InputError(scenario.file, "training.steps", value,
                     "a run of at most about 5e7 activities (two minutes of wall time): fewer steps, GPUs or DDP buckets");
  }
}

}  // namespace pipeplan::cli
