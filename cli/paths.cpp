#include "cli/paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fs = std::filesystem;

namespace pipeplan::cli {

std::string bundled_scenarios_dir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("PIPEPLAN_SCENARIOS")) candidates.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / "../share/pipeplan/scenarios");  // installed
    candidates.push_back(exe.parent_path() / "../../scenarios");              // build/cli/pipeplan
    candidates.push_back(exe.parent_path() / "../scenarios");
  }
  candidates.emplace_back(PIPEPLAN_INSTALL_SCENARIOS_DIR);
  candidates.emplace_back(PIPEPLAN_SOURCE_SCENARIOS_DIR);
  for (const auto& c : candidates) {
    if (fs::exists(c / "default.json", ec)) return fs::weakly_canonical(c, ec).string();
  }
  return "";
}

std::string default_scenario_path() {
  const std::string dir = bundled_scenarios_dir();
  return dir.empty() ? "scenarios/default.json" : dir + "/default.json";
}

std::string default_profile_path() {
  const std::string dir = bundled_scenarios_dir();
  return dir.empty() ? "scenarios/profiles/h200.json" : dir + "/profiles/h200.json";
}

}  // namespace pipeplan::cli
