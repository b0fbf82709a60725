// One thread's memcpy rate between two already-touched buffers (median of trials): shared by
// the host section and the pinned-memory measurement in calibrate/cuda/.
#pragma once

#include <cstddef>

namespace pipeplan::calibrate {

// REQUIRES dst and src hold `bytes` each, already touched (first-touch faults excluded).
// Each trial repeats the copy until it lasts >= min_trial_s; one warm-up copy first.
double median_memcpy_bytes_per_s(void* dst, const void* src, std::size_t bytes, int trials, double min_trial_s = 0.01);

}  // namespace pipeplan::calibrate
