// sim/step_stats: percentiles, the long steps' share and the p90-on-an-edge rule, against hand calculations.
#include <gtest/gtest.h>

#include <vector>

#include "sim/step_stats.hpp"

using pipeplan::sim::long_step_fraction;
using pipeplan::sim::p90_on_edge;
using pipeplan::sim::percentile;

namespace {

// n_short steps of short_s followed by n_long of long_s
std::vector<double> two_kinds(int n_short, double short_s, int n_long, double long_s) {
  std::vector<double> v(n_short, short_s);
  v.insert(v.end(), n_long, long_s);
  return v;
}

}  // namespace

TEST(StepStats, PercentileInterpolatesBetweenOrderStatisticsLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], 90) = 3.7: position 0.9 x 3 = 2.7 between 3 and 4
  EXPECT_DOUBLE_EQ(percentile({4.0, 1.0, 3.0, 2.0}, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(percentile({4.0, 1.0, 3.0, 2.0}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({5.0}, 0.9), 5.0);
  EXPECT_DOUBLE_EQ(percentile({}, 0.9), 0.0);
}

TEST(StepStats, LongStepsAreThoseOverOneAndAHalfTimesTheMedian) {
  // 88 steps of 30 ms and 12 waiting steps of 150 ms: 12% long
  EXPECT_DOUBLE_EQ(long_step_fraction(two_kinds(88, 0.030, 12, 0.150)), 0.12);
  // 44 ms is under 1.5 x 30 ms, 46 ms over it
  EXPECT_DOUBLE_EQ(long_step_fraction(two_kinds(90, 0.030, 10, 0.044)), 0.0);
  EXPECT_DOUBLE_EQ(long_step_fraction(two_kinds(90, 0.030, 10, 0.046)), 0.10);
  EXPECT_DOUBLE_EQ(long_step_fraction({}), 0.0);
}

TEST(StepStats, TheP90IsOnAnEdgeWhenAboutOneStepInTenIsLong) {
  // 92 short and 8 long steps of 30 and 150 ms: the p90 is a short step (30 ms), but two more long steps in a
  // hundred would make it 150 ms. p85 30 ms, p95 150 ms (position 94.05 of 0..99 is a long step).
  const auto steps = two_kinds(92, 0.030, 8, 0.150);
  EXPECT_DOUBLE_EQ(percentile(steps, 0.9), 0.030);
  EXPECT_DOUBLE_EQ(percentile(steps, 0.85), 0.030);
  EXPECT_DOUBLE_EQ(percentile(steps, 0.95), 0.150);
  EXPECT_TRUE(p90_on_edge(percentile(steps, 0.85), percentile(steps, 0.95)));
  // one in five long: the p85 is a long step too, the p90 firmly one
  const auto many = two_kinds(80, 0.030, 20, 0.150);
  EXPECT_FALSE(p90_on_edge(percentile(many, 0.85), percentile(many, 0.95)));
  // 3% long: the p95 is a short step, the p90 firmly one
  const auto few = two_kinds(97, 0.030, 3, 0.150);
  EXPECT_FALSE(p90_on_edge(percentile(few, 0.85), percentile(few, 0.95)));
  // the steps around the p90 alike (p95 under 1.3 x p85): nothing to warn about
  EXPECT_FALSE(p90_on_edge(0.030, 0.035));
  // 1.3x is in
  EXPECT_TRUE(p90_on_edge(0.030, 0.039));
}

TEST(StepStats, ThreeKindsOfStepPutTheEdgeBetweenTheMiddleAndTheLongOnes) {
  // 70 steps of 6 ms (the GPU's pace), 22 of 10 ms (a hold met) and 8 of 60 ms (a straggler's wait), as run 71a's
  // in-order GIL-free straggler: over 1.5x the median (9 ms) are the 30 slower steps, far from one in ten, but the
  // p90 (position 89.1 of 0..99, a 10 ms step) is two waits away from 60 ms. p85 (84.15) 10 ms, p95 (94.05) 60 ms.
  std::vector<double> steps(70, 0.006);
  steps.insert(steps.end(), 22, 0.010);
  steps.insert(steps.end(), 8, 0.060);
  EXPECT_DOUBLE_EQ(long_step_fraction(steps), 0.30);
  EXPECT_DOUBLE_EQ(percentile(steps, 0.9), 0.010);
  const auto shape = pipeplan::sim::step_time_shape(steps);
  EXPECT_DOUBLE_EQ(shape.p85_s, 0.010);
  EXPECT_DOUBLE_EQ(shape.p95_s, 0.060);
  EXPECT_TRUE(shape.p90_on_edge);
}

TEST(StepStats, OneSortGivesTheSameShapeAsTheSeparateFunctions) {
  const auto steps = two_kinds(92, 0.030, 8, 0.150);
  const auto shape = pipeplan::sim::step_time_shape(steps);
  EXPECT_DOUBLE_EQ(shape.p50_s, percentile(steps, 0.5));
  EXPECT_DOUBLE_EQ(shape.p80_s, 0.030);
  EXPECT_DOUBLE_EQ(shape.p85_s, 0.030);
  EXPECT_DOUBLE_EQ(shape.p90_s, 0.030);
  EXPECT_DOUBLE_EQ(shape.p95_s, 0.150);
  EXPECT_DOUBLE_EQ(shape.p99_s, percentile(steps, 0.99));
  EXPECT_DOUBLE_EQ(shape.long_step_fraction, 0.08);
  EXPECT_TRUE(shape.p90_on_edge);
}
