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

// The widest ratio gap splits, when it is 1.5x or more and leaves two values a side: by hand.
TEST(Replications, TwoGroupSplitTakesTheWidestGapWithEnoughOnEachSide) {
  using pipeplan::sim::two_group_split;
  EXPECT_EQ(two_group_split({1.0, 1.1, 2.0, 2.1}, 1.5, 2), 2u);  // 2.0 / 1.1 = 1.82
  EXPECT_EQ(two_group_split({1.0, 1.2, 1.4, 1.6}, 1.5, 2), 0u);  // at most 1.2 apart: one spread
  EXPECT_EQ(two_group_split({1.0, 3.0, 3.1, 3.2}, 1.5, 2), 0u);  // one low seed alone is no regime
  EXPECT_EQ(two_group_split({1.0, 2.0}, 1.5, 2), 0u);            // too few values
  EXPECT_EQ(two_group_split({0.0, 0.0, 2.0, 2.0}, 1.5, 2), 0u);  // not positive
}

// Run 71's in-order straggler (r190:00): every seed names the pin thread, yet their p90 steps sit near 20 ms or
// near 47 ms; the summary keeps each group's figures, short first, and the text names both.
TEST(Replications, OneStageWithP90StepsFarApartIsTwoRegimes) {
  const std::vector<json> reports = {report(5600, 0.018, "pin_thread"), report(5550, 0.020, "pin_thread"),
                                     report(5100, 0.045, "pin_thread"), report(5580, 0.022, "pin_thread"),
                                     report(5050, 0.050, "pin_thread"), report(5500, 0.024, "pin_thread"),
                                     report(5000, 0.055, "pin_thread"), report(5150, 0.037, "pin_thread")};
  const json s = pipeplan::sim::replication_summary(reports, {1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_TRUE(s.contains("p90_regimes"));
  const json& g = s["p90_regimes"];
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0]["n"], 4);  // 18, 20, 22, 24 ms: then 37 / 24 = 1.54
  EXPECT_NEAR(g[0]["step_time_p90_s"]["mean"].get<double>(), 0.021, 1e-12);
  EXPECT_NEAR(g[0]["samples_per_s"]["mean"].get<double>(), (5600.0 + 5550.0 + 5580.0 + 5500.0) / 4.0, 1e-9);
  EXPECT_EQ(g[1]["n"], 4);
  EXPECT_NEAR(g[1]["step_time_p90_s"]["mean"].get<double>(), (0.037 + 0.045 + 0.050 + 0.055) / 4.0, 1e-12);
  EXPECT_NEAR(g[1]["samples_per_s"]["mean"].get<double>(), (5100.0 + 5050.0 + 5000.0 + 5150.0) / 4.0, 1e-9);
  const std::string text = pipeplan::sim::replication_text(s);
  EXPECT_NE(text.find("the p90 step falls in two regimes"), std::string::npos) << text;
  EXPECT_NE(text.find("short p90      4 of 8: 5,558 samples/s (5,500-5,600), step time p90 21.0 ms (18.0-24.0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("long p90       4 of 8: 5,075 samples/s (5,000-5,150), step time p90 46.8 ms (37.0-55.0)"),
            std::string::npos)
      << text;
  // Seeds that already split by stage are summarized by stage only (the first test's case).
  EXPECT_FALSE(pipeplan::sim::replication_summary({report(1000, 0.02, "workers"), report(1000, 0.02, "workers"),
                                                   report(900, 0.06, "pin_thread"), report(900, 0.06, "pin_thread")},
                                                  {1, 2, 3, 4})
                   .contains("p90_regimes"));
}

}  // namespace
