#include "sim/arrival_order.hpp"

#include <cstddef>

namespace pipeplan::sim {

double out_of_order_fraction(const std::vector<double>& done_s, double from_s, double to_s) {
  auto inside = [&](double t) { return t >= 0.0 && t >= from_s && t <= to_s; };
  long pairs = 0, swapped = 0;
  for (std::size_t b = 0; b + 1 < done_s.size(); ++b) {
    if (!inside(done_s[b]) || !inside(done_s[b + 1])) continue;
    ++pairs;
    if (done_s[b] > done_s[b + 1]) ++swapped;
  }
  return pairs > 0 ? static_cast<double>(swapped) / static_cast<double>(pairs) : 0.0;
}

}  // namespace pipeplan::sim
