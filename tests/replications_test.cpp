// sim::replication_summary and its text, on hand-built reports (no simulation).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/replications.hpp"

namespace {

using nlohmann::json;

json report(double samples_per_s, double p90_s, const char* stage) {
  return {{"throughput", {{"samples_per_s", samples_per_s}}},
          {"step_time_s", {{"mean", 0.05}, {"p90", p90_s}}},
          {"bottleneck", {{"stage", stage}}}};
}

// Three seeds overlap the loop with the pin thread (host-bound, short p90), one waits for a slow worker (input-
// bound, long p90), as validation run 23's image ResNet-50 case: each regime is summarized apart.
TEST(Replications, SeedsThatNameDifferentStagesAreSummarizedApart) {
  const std::vector<json> reports = {report(1240, 0.075, "host_loop"), report(1210, 0.101, "host_loop"),
                                     report(1190, 0.138, "workers"), report(1330, 0.072, "host_loop")};
  const json s = pipeplan::sim::replication_summary(reports, {1, 2, 3, 4});
  EXPECT_EQ(s["bottleneck_votes"]["host_loop"], 3);
  EXPECT_EQ(s["bottleneck_votes"]["workers"], 1);
  const json& host = s["by_bottleneck"]["host_loop"];
  EXPECT_EQ(host["n"], 3);
  EXPECT_NEAR(host["samples_per_s"]["mean"].get<double>(), (1240.0 + 1210.0 + 1330.0) / 3.0, 1e-9);
  EXPECT_DOUBLE_EQ(host["step_time_p90_s"]["min"].get<double>(), 0.072);
  EXPECT_DOUBLE_EQ(host["step_time_p90_s"]["max"].get<double>(), 0.101);
  const json& workers = s["by_bottleneck"]["workers"];
  EXPECT_EQ(workers["n"], 1);
  EXPECT_DOUBLE_EQ(workers["step_time_p90_s"]["mean"].get<double>(), 0.138);
  EXPECT_DOUBLE_EQ(workers["samples_per_s"]["cv"].get<double>(), 0.0);  // one run: no spread
  // all seeds together: the mean of the four p90s, which describes neither regime
  EXPECT_NEAR(s["step_time_s"]["p90"]["mean"].get<double>(), (0.075 + 0.101 + 0.138 + 0.072) / 4.0, 1e-12);
  const std::string text = pipeplan::sim::replication_text(s);
  EXPECT_NE(text.find("the seeds name 2 bottlenecks"), std::string::npos) << text;
  EXPECT_NE(text.find("host_loop      3 of 4: 1,260 samples/s (1,210-1,330), step time p90 82.7 ms (72.0-101.0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("workers        1 of 4: 1,190 samples/s (1,190-1,190), step time p90 138.0 ms"), std::string::npos)
      << text;
}

TEST(Replications, OneRegimeAddsNoRegimeLines) {
  const std::vector<json> reports = {report(1000, 0.05, "workers"), report(1100, 0.06, "workers")};
  const json s = pipeplan::sim::replication_summary(reports, {7, 8});
  EXPECT_EQ(s["by_bottleneck"].size(), 1u);
  EXPECT_EQ(s["by_bottleneck"]["workers"]["n"], 2);
  const std::string text = pipeplan::sim::replication_text(s);
  EXPECT_EQ(text.find("bottlenecks"), std::string::npos) << text;
  EXPECT_NE(text.find("workers 2 of 2"), std::string::npos) << text;
}

}  // namespace
