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
  const Chunks own = chunks.size() > 1 ? without_common_mode(chunks, gap_s) : chunks;
  const auto own_fit = fit_core_wander(own, lag_chunks, gap_s);
  out["own"] = wander_json(own_fit);
  out["slow"] = nullptr;
  if (own_fit) {
    if (const auto slow = fit_slow_wander(own, window_s, own_fit->correlation_s, gap_s)) {
      out["slow"] = {{"cv", slow->cv},
                     {"correlation_s", slow->correlation_s},
                     {"window_s", slow->window_s},
                     {"windows", slow->windows},
                     {"across_threads_adjacent_correlation",
                      slow->across_threads_adjacent_correlation ? nlohmann::json(*slow->across_threads_adjacent_correlation)
                                                                : nlohmann::json(nullptr)}};
    }
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
  return nlohmann::json{{"no_pause", refit(plain, 1.5, 0.0)}, {"paused", refit(paused, 3.0, kWanderLogPauseS)}};
}

}  // namespace pipeplan::calibrate
