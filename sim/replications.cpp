#include "sim/replications.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "sim/report.hpp"

namespace pipeplan::sim {

namespace {

// Two groups of seeds' p90 steps this far apart (the longer group's shortest over the shorter's longest) are two
// regimes, not one spread: run 71's straggler seeds went 18-37 ms around a measured 51 ms.
constexpr double kP90RegimeRatio = 1.5;

nlohmann::json spread(const std::vector<double>& v) {
  const double n = static_cast<double>(v.size());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double ss = 0.0;
  for (double x : v) ss += (x - mean) * (x - mean);
  const double sd = v.size() > 1 ? std::sqrt(ss / (n - 1.0)) : 0.0;
  return {{"mean", mean},
          {"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())},
          {"cv", mean > 0.0 ? sd / mean : 0.0}};
}

std::vector<double> column(const std::vector<nlohmann::json>& reports, const nlohmann::json::json_pointer& at) {
  std::vector<double> v;
  for (const auto& r : reports) v.push_back(r.at(at).get<double>());
  return v;
}

// One group of seeds in the text report: "label n of N: rate (min-max), step time p90 (min-max)".
std::string group_line(const std::string& label, const nlohmann::json& g, std::size_t n_seeds) {
  const auto& t = g["samples_per_s"];
  const auto& q = g["step_time_p90_s"];
  char line[512];
  std::snprintf(line, sizeof line, "      %-14s %d of %zu: %s samples/s (%s-%s), step time p90 %.1f ms (%.1f-%.1f)\n",
                label.c_str(), g["n"].get<int>(), n_seeds, with_thousands(t["mean"].get<double>()).c_str(),
                with_thousands(t["min"].get<double>()).c_str(), with_thousands(t["max"].get<double>()).c_str(),
                1e3 * q["mean"].get<double>(), 1e3 * q["min"].get<double>(), 1e3 * q["max"].get<double>());
  return line;
}

}  // namespace

std::size_t two_group_split(const std::vector<double>& sorted, double min_ratio, std::size_t min_side) {
  if (min_side == 0 || sorted.size() < 2 * min_side) return 0;
  std::size_t best = 0;
  double best_ratio = 0.0;
  for (std::size_t i = min_side; i + min_side <= sorted.size(); ++i) {
    if (!(sorted[i - 1] > 0.0)) return 0;
    const double ratio = sorted[i] / sorted[i - 1];
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = i;
    }
  }
  return best_ratio >= min_ratio ? best : 0;
}

nlohmann::json replication_summary(const std::vector<nlohmann::json>& reports, const std::vector<std::uint64_t>& seeds) {
  using ptr = nlohmann::json::json_pointer;
  std::map<std::string, int> votes;
  std::map<std::string, std::vector<std::size_t>> by_stage;  // the runs (indices) naming each stage
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto stage = reports[i].at(ptr("/bottleneck/stage")).get<std::string>();
    ++votes[stage];
    by_stage[stage].push_back(i);
  }
  const auto samples_per_s = column(reports, ptr("/throughput/samples_per_s"));
  const auto step_p90_s = column(reports, ptr("/step_time_s/p90"));
  const auto pick = [](const std::vector<double>& all, const std::vector<std::size_t>& runs) {
    std::vector<double> out;
    for (std::size_t i : runs) out.push_back(all[i]);
    return out;
  };
  // Seeds that name different stages settled in different regimes: two stages close to each other's capacity
  // (validation run 23, finding 5: a host-bound loop overlapping the pin thread, or a faster one that waits for a
  // slow worker, with the same throughput and p90 steps twice apart). Each regime's own figures say what one
  // measured run can look like; their mean describes none of them.
  const auto group = [&](const std::vector<std::size_t>& runs) {
    return nlohmann::json{{"n", runs.size()},
                          {"samples_per_s", spread(pick(samples_per_s, runs))},
                          {"step_time_p90_s", spread(pick(step_p90_s, runs))}};
  };
  nlohmann::json regimes = nlohmann::json::object();
  for (const auto& [stage, runs] : by_stage) regimes[stage] = group(runs);
  nlohmann::json out = {
      {"n", reports.size()},
      {"seeds", seeds},
      {"samples_per_s", spread(samples_per_s)},
      {"step_time_s", {{"mean", spread(column(reports, ptr("/step_time_s/mean")))}, {"p90", spread(step_p90_s)}}},
      {"bottleneck_votes", votes},
      {"by_bottleneck", regimes}};
  // One stage, yet p90 steps far apart: two regimes of the same bottleneck (validation run 71, finding 2).
  if (by_stage.size() == 1) {
    std::vector<std::size_t> order(reports.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return step_p90_s[a] < step_p90_s[b]; });
    const std::vector<double> sorted = pick(step_p90_s, order);
    if (const std::size_t cut = two_group_split(sorted, kP90RegimeRatio, 2); cut > 0) {
      const std::vector<std::size_t> shorter(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(cut));
      const std::vector<std::size_t> longer(order.begin() + static_cast<std::ptrdiff_t>(cut), order.end());
      out["p90_regimes"] = {group(shorter), group(longer)};
    }
  }
  return out;
}

std::string replication_text(const nlohmann::json& s) {
  const auto& thr = s["samples_per_s"];
  const auto& p90 = s["step_time_s"]["p90"];
  const auto seeds = s["seeds"].get<std::vector<std::uint64_t>>();
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line, "\n  over %zu seeds (%llu..%llu; the report above is seed %llu's):\n", seeds.size(),
                static_cast<unsigned long long>(seeds.front()), static_cast<unsigned long long>(seeds.back()),
                static_cast<unsigned long long>(seeds.front()));
  out += line;
  std::snprintf(line, sizeof line, "    throughput      mean %s samples/s  (min %s, max %s, cv %.1f%%)\n",
                with_thousands(thr["mean"].get<double>()).c_str(), with_thousands(thr["min"].get<double>()).c_str(),
                with_thousands(thr["max"].get<double>()).c_str(), 100.0 * thr["cv"].get<double>());
  out += line;
  std::snprintf(line, sizeof line, "    step time p90   mean %.1f ms  (min %.1f, max %.1f, cv %.1f%%)\n",
                1e3 * p90["mean"].get<double>(), 1e3 * p90["min"].get<double>(), 1e3 * p90["max"].get<double>(),
                100.0 * p90["cv"].get<double>());
  out += line;
  std::string votes;
  for (const auto& [stage, count] : s["bottleneck_votes"].items()) {
    if (!votes.empty()) votes += ", ";
    votes += stage + " " + std::to_string(count.get<int>()) + " of " + std::to_string(seeds.size());
  }
  out += "    bottleneck      " + votes + "\n";
  const auto& regimes = s["by_bottleneck"];
  if (regimes.size() > 1) {
    std::snprintf(line, sizeof line,
                  "    the seeds name %zu bottlenecks (stages near each other's capacity: a run can be held by "
                  "either, and its p90 step differs); by the stage each seed names:\n",
                  regimes.size());
    out += line;
    for (const auto& [stage, g] : regimes.items()) out += group_line(stage, g, seeds.size());
  }
  if (s.contains("p90_regimes")) {
    const auto& g = s["p90_regimes"];
    out += "    the p90 step falls in two regimes of the same bottleneck (one run settles in either; their mean "
           "describes neither):\n";
    out += group_line("short p90", g[0], seeds.size()) + group_line("long p90", g[1], seeds.size());
  }
  return out;
}

}  // namespace pipeplan::sim
