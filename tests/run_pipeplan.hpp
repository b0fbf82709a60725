// Running the pipeplan binary from tests: SimGrid allows one simulation per process, and the
// CLI is the contract, so simulation tests go through it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipeplan::test {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs PIPEPLAN_BINARY with `args` (no shell involved).
RunResult run_pipeplan(const std::vector<std::string>& args);

// Writes `scenario` to a fresh temporary file and returns its path.
std::string write_temp(const std::string& contents, const std::string& suffix = ".json");

// Simulates `scenario` on the test profile (tests/data/flat_profile.json unless given) and
// returns the JSON report; fails the test on a non-zero exit.
nlohmann::json simulate(const nlohmann::json& scenario, const std::vector<std::string>& extra = {},
                        const std::string& profile = "");

std::string test_data(const std::string& name);

// The whole of a (test's own, small) file; "" if it cannot be read.
std::string slurp(const std::string& path);

}  // namespace pipeplan::test
