#include "calibrate/host_memcpy.hpp"

#include <cstring>
#include <vector>

#include "calibrate/context.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate {

double median_memcpy_bytes_per_s(void* dst, const void* src, std::size_t bytes, int trials, double min_trial_s) {
  std::memcpy(dst, src, bytes);  // warm-up: TLBs, caches, turbo
  std::vector<double> rates;
  for (int t = 0; t < trials; ++t) {
    std::size_t copies = 0;
    const double t0 = now_s();
    double t1 = t0;
    do {
      std::memcpy(dst, src, bytes);
      // The compiler must not drop copies whose result is never read.
      asm volatile("" : : "r"(dst) : "memory");
      ++copies;
      t1 = now_s();
    } while (t1 - t0 < min_trial_s);
    rates.push_back(static_cast<double>(bytes) * static_cast<double>(copies) / (t1 - t0));
  }
  return median(rates);
}

}  // namespace pipeplan::calibrate
