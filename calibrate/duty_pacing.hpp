// Pacing a duty run (compute section's step_vs_gpu_duty; the harness's gpu_duty_curve does the same in
// Python): steps launched one after another, the host sleeping between them so that the GPU is busy a
// target share of the wall time.
#pragma once

#include <algorithm>

namespace pipeplan::calibrate {

// The rest after a step that brings the run's duty so far back to the target: the GPU time so far over the
// target duty, less the wall time so far (both counted from the run's start, the step just done included).
// A fixed period (rested step / target) overshot: the step lengthens as the GPU heats, so run 46 aimed at
// 0.75 and 0.9 and ran at 0.82 and 1.00 (a 23.7 ms rested step ran 26.1 ms at 0.82). Paced on the time the
// steps actually took, the duty holds whatever the step does, and a sleep's own overshoot is paid back by
// the next rest. 0 at a target of 1 or more (back to back) and when the run is already behind.
inline double rest_for_duty_s(double busy_s, double wall_s, double target_duty) {
  if (target_duty <= 0.0 || target_duty >= 1.0) return 0.0;
  return std::max(0.0, busy_s / target_duty - wall_s);
}

}  // namespace pipeplan::calibrate
