// Property tests of the contract "bad input: exit 2 and one line; never a crash": every scenario key that
// docs/scenario.md documents, and every value in the shipped H200 profile, set in turn to an extreme or a wrong
// type, must either simulate to a finite report (exit 0) or be refused in one line (exit 2). Before these tests a
// per-sample load of 1e300 s, a storage rate of 1e-300 B/s or a GPU duty point's relative time of 1e-300 reached
// SimGrid as an infinite duration, which aborted the process.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_pipeplan.hpp"

using nlohmann::json;
using pipeplan::test::run_pipeplan;
using pipeplan::test::slurp;
using pipeplan::test::write_temp;

namespace {

// The dotted keys of docs/scenario.md's tables (`section.key` in a row's first cell).
std::vector<std::string> documented_scenario_keys() {
  const std::string doc = slurp(std::string(PIPEPLAN_SOURCE_DIR) + "/docs/scenario.md");
  const std::regex row(R"(\n\| `([a-z_]+\.[a-z_.]+)`)");
  std::set<std::string> keys;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it)
    keys.insert((*it)[1].str());
  return {keys.begin(), keys.end()};
}

// Values no reader should let through to the simulator unchecked, as `--set` takes them (JSON, else a string).
const std::vector<std::string> kExtremes = {"-1", "0", "1e-300", "1e300", "\"x\""};

// One run: exit 0 with a finite, positive throughput and p90 step, or exit 2 with one line on stderr.
void expect_report_or_one_line(const std::vector<std::string>& args, const std::string& label) {
  const auto r = run_pipeplan(args);
  if (r.exit_code == 2) {
    ASSERT_FALSE(r.err.empty()) << label;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << label << ": not one line: " << r.err;
    EXPECT_EQ(r.err.find("unknown key"), std::string::npos) << label << ": a documented key is unknown: " << r.err;
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << label << ": " << r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0);
  const json report = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << label << ": not JSON";
  const double samples_per_s = report["throughput"]["samples_per_s"].get<double>();
  const double p90_s = report["step_time_s"]["p90"].get<double>();
  EXPECT_TRUE(std::isfinite(samples_per_s) && samples_per_s > 0.0) << label << ": throughput " << samples_per_s;
  EXPECT_TRUE(std::isfinite(p90_s) && p90_s > 0.0) << label << ": p90 step " << p90_s;
}

// Three jobs that take different paths through the simulator: warm loads, cold reads, two DDP ranks.
const std::vector<std::vector<std::string>> kBases = {
    {},
    {"--set", "storage.page_cache_hit_ratio=0"},
    {"--set", "node.gpus=2", "--set", "ddp.gradient_bytes=1e8"},
};

}  // namespace

TEST(ExtremeValues, EveryDocumentedScenarioKeySimulatesOrIsRefusedInOneLine) {
  const auto keys = documented_scenario_keys();
  ASSERT_GT(keys.size(), 60u);  // the tables were read
  for (const auto& key : keys)
    for (const auto& value : kExtremes)
      for (const auto& base : kBases) {
        std::vector<std::string> args = {"simulate", "--steps", "20", "--format", "json"};
        args.insert(args.end(), base.begin(), base.end());
        args.insert(args.end(), {"--set", key + "=" + value});
        expect_report_or_one_line(args, key + "=" + value + " (base " + std::to_string(&base - kBases.data()) + ")");
      }
}

namespace {

// Paths to the profile's leaves (numbers, strings, arrays of numbers); arrays of objects by their first two entries.
void profile_leaves(const json& node, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) profile_leaves(it.value(), at / it.key(), out);
  } else if (node.is_array() && !node.empty() && node.front().is_structured()) {
    for (std::size_t i = 0; i < std::min<std::size_t>(node.size(), 2); ++i) profile_leaves(node[i], at / i, out);
  } else {
    out.push_back(at);
  }
}

}  // namespace

TEST(ExtremeValues, EveryShippedProfileValueSimulatesOrIsRefusedInOneLine) {
  const json profile = json::parse(slurp(std::string(PIPEPLAN_SOURCE_DIR) + "/scenarios/profiles/h200.json"));
  std::vector<json::json_pointer> leaves;
  profile_leaves(profile, json::json_pointer(), leaves);
  ASSERT_GT(leaves.size(), 100u);
  for (const auto& leaf : leaves)
    for (const auto& value : {json(-1), json(0), json(1e-300), json(1e300), json("x")}) {
      json mutated = profile;
      mutated[leaf] = value;
      const std::string path = write_temp(mutated.dump());
      for (std::size_t b = 0; b < 2; ++b) {  // warm and cold: the profile's storage figures matter only cold
        std::vector<std::string> args = {"simulate", "--profile", path, "--steps", "20", "--format", "json"};
        args.insert(args.end(), kBases[b].begin(), kBases[b].end());
        expect_report_or_one_line(args, leaf.to_string() + "=" + value.dump() + " (base " + std::to_string(b) + ")");
      }
      std::remove(path.c_str());
    }
}
