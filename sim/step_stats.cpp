#include "sim/step_stats.hpp"

#include <algorithm>
#include <cmath>

namespace pipeplan::sim {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double long_step_fraction(const std::vector<double>& step_s) {
  if (step_s.empty()) return 0.0;
  const double cutoff_s = kLongStepOverMedian * percentile(step_s, 0.5);
  const auto n_long = std::count_if(step_s.begin(), step_s.end(), [&](double t) { return t > cutoff_s; });
  return static_cast<double>(n_long) / static_cast<double>(step_s.size());
}

bool p90_on_edge(double long_fraction, double step_p80_s, double step_p95_s) {
  return long_fraction >= 0.05 && long_fraction <= 0.15 && step_p95_s >= 1.3 * step_p80_s;
}

}  // namespace pipeplan::sim
