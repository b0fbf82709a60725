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
  double p50_s = 0.0, p80_s = 0.0, p90_s = 0.0, p95_s = 0.0, p99_s = 0.0;
  double long_step_fraction = 0.0;
  bool p90_on_edge = false;
};
StepTimeShape step_time_shape(std::vector<double> step_s);

// Whether the p90 step sits on the edge between short and long steps: between 5% and 15% of the steps are
// long (so the 90th percentile is within five points of the boundary) and the p95 is at least 1.3x the p80
// (the steps on either side of the p90 differ enough for it to matter).
bool p90_on_edge(double long_fraction, double step_p80_s, double step_p95_s);

}  // namespace pipeplan::sim
