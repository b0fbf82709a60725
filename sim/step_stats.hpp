// The shape of the measured window's step times: percentiles and how many steps are long.
//
// An input-bound loop's steps are of two kinds: short ones (the batch was ready) and long ones (the loop
// waited for a worker). When about one step in ten is long, the p90 step falls between the two kinds and a
// small change in the long steps' share moves it a lot: over validation runs 11-32 the cases where 7-15% of
// the steps waited had the p90 step predicted within 26.8% median against 9.6% for the others, and their own
// two half-windows disagreed most (docs/validation.md). The report says so, with the p80 and p95 around it.
#pragma once

#include <vector>

namespace pipeplan::sim {

// The q-quantile (0..1) with linear interpolation between order statistics (numpy's default); 0 when empty.
double percentile(std::vector<double> values, double q);

// A step is long when it takes more than kLongStepOverMedian times the median step.
inline constexpr double kLongStepOverMedian = 1.5;

// The share of steps longer than kLongStepOverMedian x the median step; 0 when empty.
double long_step_fraction(const std::vector<double>& step_s);

// The measured window's step times summarised from one sort: the percentiles the report gives, the long steps'
// share and the edge flag below.
struct StepTimeShape {
  double p50_s = 0.0, p80_s = 0.0, p85_s = 0.0, p90_s = 0.0, p95_s = 0.0, p99_s = 0.0;
  double long_step_fraction = 0.0;
  bool p90_on_edge = false;
};
StepTimeShape step_time_shape(std::vector<double> step_s);

// Whether the p90 step sits on an edge: the step time rises by 1.3x or more from the p85 to the p95, so moving the
// share of slow steps by five points either way moves the p90 that much. With two kinds of step (short, and long
// where the loop waited) that is 5-15% of the steps long; it also catches three kinds (seventy-seventh session: a
// GPU-bound loop's 6 ms steps, 9 ms ones where the pin thread's release met the loop, and an in-order straggler's
// 50-100 ms waits in 7-11% of steps, whose long share over 1.5x the median is 20-37%).
bool p90_on_edge(double step_p85_s, double step_p95_s);

}  // namespace pipeplan::sim
