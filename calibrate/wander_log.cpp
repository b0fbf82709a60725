#include "calibrate/wander_log.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "calibrate/stats.hpp"

namespace pipeplan::calibrate {

namespace {

using Chunks = std::vector<std::vector<double>>;

nlohmann::json wander_json(const std::optional<CoreWander>& w) {
  if (!w) return nullptr;
  return {{"cv", w->cv}, {"correlation_s", w->correlation_s}};
}

nlohmann::json refit(const Chunks& chunks, double window_s, double gap_s) {
  if (chunks.empty()) return nullptr;
  double seconds = 0.0, sum_s = 0.0;
  std::size_t n = 0;
  for (const auto& t : chunks) {
    double at_s = 0.0;
    for (double d : t) {
      at_s += d + gap_s;
      sum_s += d + gap_s;
      ++n;
    }
    seconds = std::max(seconds, at_s);
  }
  if (n == 0) return nullptr;
  const int lag_chunks = std::max(1, static_cast<int>(std::lround(0.3 / (sum_s / static_cast<double>(n)))));
  nlohmann::json out = {{"threads", chunks.size()}, {"seconds", seconds}, {"fast", wander_json(fit_core_wander(chunks, lag_chunks, gap_s))}};
  const auto own = fit_own_wander(chunks, lag_chunks, window_s, gap_s);
  out["own"] = wander_json(own ? std::optional<CoreWander>(own->fast) : std::nullopt);
  out["slow"] = nullptr;
  if (own && own->slow) {
    const SlowWander& slow = *own->slow;
    out["slow"] = {{"cv", slow.cv},
                   {"correlation_s", slow.correlation_s},
                   {"window_s", slow.window_s},
                   {"windows", slow.windows},
                   {"across_threads_adjacent_correlation",
                    slow.across_threads_adjacent_correlation ? nlohmann::json(*slow.across_threads_adjacent_correlation)
                                                             : nlohmann::json(nullptr)}};
  }
  return out;
}

}  // namespace

std::optional<nlohmann::json> refit_wander_log(std::istream& log) {
  Chunks plain, paused;
  std::string line;
  while (std::getline(log, line)) {
    const bool is_paused = line.find("wander chunk seconds paused, thread") != std::string::npos;
    if (!is_paused && line.find("wander chunk seconds, thread") == std::string::npos) continue;
    const auto colon = line.find(':', line.find("thread"));
    if (colon == std::string::npos) continue;
    std::istringstream numbers(line.substr(colon + 1));
    std::vector<double> d;
    for (double v; numbers >> v;)
      if (v > 0.0) d.push_back(v);
    (is_paused ? paused : plain).push_back(std::move(d));
  }
  if (plain.empty() && paused.empty()) return std::nullopt;
  return nlohmann::json{{"no_pause", refit(plain, kSlowWindowNoPauseS, 0.0)},
                        {"paused", refit(paused, kSlowWindowPausedS, kWanderLogPauseS)}};
}

}  // namespace pipeplan::calibrate
