#include "sim/step_stats.hpp"

#include <algorithm>
#include <cmath>

namespace pipeplan::sim {

namespace {

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double long_step_fraction_of_sorted(const std::vector<double>& sorted) {
  if (sorted.empty()) return 0.0;
  const double cutoff_s = kLongStepOverMedian * percentile_of_sorted(sorted, 0.5);
  const auto first_long = std::upper_bound(sorted.begin(), sorted.end(), cutoff_s);
  return static_cast<double>(sorted.end() - first_long) / static_cast<double>(sorted.size());
}

}  // namespace

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return percentile_of_sorted(values, q);
}

double long_step_fraction(const std::vector<double>& step_s) {
  std::vector<double> sorted = step_s;
  std::sort(sorted.begin(), sorted.end());
  return long_step_fraction_of_sorted(sorted);
}

StepTimeShape step_time_shape(std::vector<double> step_s) {
  std::sort(step_s.begin(), step_s.end());
  StepTimeShape shape;
  shape.p50_s = percentile_of_sorted(step_s, 0.5);
  shape.p80_s = percentile_of_sorted(step_s, 0.8);
  shape.p85_s = percentile_of_sorted(step_s, 0.85);
  shape.p90_s = percentile_of_sorted(step_s, 0.9);
  shape.p95_s = percentile_of_sorted(step_s, 0.95);
  shape.p99_s = percentile_of_sorted(step_s, 0.99);
  shape.long_step_fraction = long_step_fraction_of_sorted(step_s);
  shape.p90_on_edge = p90_on_edge(shape.p85_s, shape.p95_s);
  return shape;
}

bool p90_on_edge(double step_p85_s, double step_p95_s) {
  return step_p85_s > 0.0 && step_p95_s >= 1.3 * step_p85_s;
}

}  // namespace pipeplan::sim
