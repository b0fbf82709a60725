// The core-speed wander refit from a calibrate log's chunk lines ("decode: wander chunk seconds[ paused], thread
// N: d1 d2 ..."), so a call's logged chunk times can be read again with a later fit (`pipeplan calibrate
// --wander-from-log FILE`): the slower part (fit_slow_wander) of calls logged before it existed, for the what-if
// scoring in calibrate/validation.
#pragma once

#include <istream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace pipeplan::calibrate {

// The pause after each chunk of the decode section's paused wander log (a worker's sleep between batches); the
// fits count it in the time axis (gap_s), the log's lines do not carry it.
inline constexpr double kWanderLogPauseS = 0.002;
// The windows the slow part is read in: 1.5 s over the 6 s log without pauses, 3 s over the paused one (12 s since run 41, 24 s in run 41's logs).
inline constexpr double kSlowWindowNoPauseS = 1.5;
inline constexpr double kSlowWindowPausedS = 3.0;

// Per set of chunk lines (`no_pause`: the 6 s log the profile's cpu.core_speed_* come from; `paused`: the log
// pausing 2 ms after each chunk, since the thirty-sixth session), an object with threads, seconds (the longest
// thread's), the plain fit (`fast`: cv, correlation_s, as the profile's keys), each thread's own (`own`, what the
// threads share removed) and the slow part of the own (`slow`: cv, correlation_s, window_s, windows,
// across_threads_adjacent_correlation; windows of 1.5 s without the pause and 3 s with it, as the decode section
// logs them); a set absent from the log is null. The lag for the fast fits is the decode section's: 0.3 s in
// chunks. Empty when the log has no chunk line.
std::optional<nlohmann::json> refit_wander_log(std::istream& log);

}  // namespace pipeplan::calibrate
