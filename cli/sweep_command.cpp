// pipeplan sweep [SCENARIO.json] --vary KEY=V1,V2,... [--vary ...] [--profile P] [--steps N]
//                [--seed S] [--set K=V]... [--replications R] [--jobs J] [--format text|json]
//
// What-if over PyTorch's knobs: the cartesian product of the --vary lists, one simulation per
// point (R with --replications). SimGrid allows one simulation per process, so each runs in a
// forked child (cli/forked.hpp; which also runs them in parallel); the parent validates every
// point first, so bad input is reported before anything runs, and never half-way through.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/forked.hpp"
#include "cli/inputs.hpp"
#include "models/input_error.hpp"
#include "sim/replications.hpp"
#include "sim/report.hpp"

namespace po = boost::program_options;

namespace pipeplan::cli {

namespace {

struct Axis {
  std::string key;
  std::vector<std::string> values;
};

// "loader.num_workers=0,2,4" -> {key, {"0","2","4"}}. Values are JSON scalars or bare words.
Axis parse_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--vary", "", "\"" + text + "\"", "KEY.PATH=V1,V2,... (for example loader.num_workers=2,4,8)");
  Axis axis{text.substr(0, eq), {}};
  std::stringstream values(text.substr(eq + 1));
  std::string v;
  while (std::getline(values, v, ','))
    if (!v.empty()) axis.values.push_back(v);
  if (axis.values.empty()) throw InputError("--vary", axis.key, "\"" + text + "\"", "at least one value");
  return axis;
}

// The points of the cartesian product, each a list of KEY=VALUE assignments (last axis fastest).
std::vector<std::vector<std::string>> cartesian(const std::vector<Axis>& axes) {
  std::vector<std::vector<std::string>> points{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        auto q = p;
        q.push_back(axis.key + "=" + v);
        next.push_back(q);
      }
    points = std::move(next);
  }
  return points;
}

// The value of KEY=VALUE as --set reads it: JSON when it parses, else the bare word as a string.
nlohmann::json point_value(const std::string& assignment) {
  const std::string text = assignment.substr(assignment.find('=') + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  return value.is_discarded() ? nlohmann::json(text) : value;
}

std::string display(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

}  // namespace

int sweep_command(int argc, char** argv) {
  po::options_description options("pipeplan sweep [SCENARIO.json] --vary KEY=V1,V2,... [options]\n\n"
                                  "Simulates every combination of the --vary values (any scenario key, PyTorch's names)\n"
                                  "and ranks them by throughput. Without SCENARIO, the bundled default scenario.\n\noptions");
  CommonOptions common;
  std::vector<std::string> varies;
  int jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int replications = 1;
  add_common_options(options, common);
  options.add_options()
      ("vary", po::value(&varies)->composing(), "a key and its values: --vary loader.num_workers=2,4,8 (repeatable: the product)")
      ("replications", po::value(&replications),
       "simulate each point with R seeds and rank by their mean (default 1; see pipeplan simulate --replications)")
      ("jobs,j", po::value(&jobs), "simulations at once (default: the number of cores)");
  if (!parse_command_line(argc, argv, options, common)) return 0;
  if (varies.empty()) throw InputError("", "--vary", "nothing", "at least one --vary KEY=V1,V2,...");
  if (jobs < 1 || jobs > 1024) throw InputError("", "--jobs", std::to_string(jobs), "an integer in [1, 1024]");
  if (replications < 1 || replications > 1000)
    throw InputError("", "--replications", std::to_string(replications), "an integer in [1, 1000]");

  std::vector<Axis> axes;
  for (const auto& v : varies) axes.push_back(parse_axis(v));
  const auto points = cartesian(axes);
  if (points.size() > 10000) throw InputError("", "--vary", std::to_string(points.size()) + " points", "at most 10,000 points");
  if (points.size() * static_cast<std::size_t>(replications) > 100000)
    throw InputError("", "--replications", std::to_string(replications),
                     "at most 100,000 simulations in all (" + std::to_string(points.size()) + " points)");

  // Validate every point before running any.
  const Profile profile = load_profile(common.profile_path);
  const std::string scenario_path = scenario_path_or_default(common.positional.empty() ? "" : common.positional[0]);
  std::vector<Scenario> scenarios;
  for (const auto& point : points)
    scenarios.push_back(with_steady_window(load_scenario(common, profile, point), common.steps));

  // Run every point (and each of its seeds) in forked children, at most `jobs` at once.
  std::vector<ForkedRun> runs;
  for (const auto& scenario : scenarios)
    for (auto& run : seed_runs(scenario, replications)) runs.push_back(std::move(run));
  const auto reports = simulate_forked(runs, profile, 0, jobs, false);  // each point's steps: with_steady_window

  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < points.size(); ++i) {
    nlohmann::json set = nlohmann::json::object();
    for (const auto& a : points[i]) set[a.substr(0, a.find('='))] = point_value(a);
    nlohmann::json result = reports[i * replications].report;
    if (replications > 1) {
      std::vector<nlohmann::json> jsons;
      std::vector<std::uint64_t> seeds;
      for (int k = 0; k < replications; ++k) {
        jsons.push_back(reports[i * replications + k].report);
        seeds.push_back(runs[i * replications + k].scenario.seed);
      }
      result["replications"] = sim::replication_summary(jsons, seeds);
    }
    rows.push_back({{"set", set}, {"result", result}});
  }
  // Ranked by the mean over seeds when there are several, else by the one run's throughput; a sequence job by its
  // real tokens a second (a packed batch's samples count the one cut at its end; padding counts nothing).
  // A job across nodes (cluster.nodes) is ranked by the whole job's rate: the node's times its nodes (each node runs
  // as the simulated one), and the text adds the rate a GPU, which shows what the network costs as nodes are added.
  const bool by_tokens = !rows.empty() && rows.front()["result"].contains("sequence");
  auto nodes = [](const nlohmann::json& row) { return row["result"]["throughput"].value("nodes", 1); };
  bool across_nodes = false;
  for (const auto& row : rows) across_nodes = across_nodes || nodes(row) > 1;
  auto tokens = [&](const nlohmann::json& row) {
    return row["result"]["sequence"]["tokens_per_s"].get<double>() * nodes(row);
  };
  auto rate = [&](const nlohmann::json& row) {
    const auto& r = row["result"];
    return nodes(row) * (r.contains("replications") ? r["replications"]["samples_per_s"]["mean"].get<double>()
                                                    : r["throughput"]["samples_per_s"].get<double>());
  };
  auto gpus = [&](const nlohmann::json& row) {
    // the point's ranks: its nodes times the node's GPUs (the report's throughput section)
    return nodes(row) * row["result"]["throughput"].value("node_gpus", 1);
  };
  auto rank = [&](const nlohmann::json& row) { return by_tokens ? tokens(row) : rate(row); };

  std::size_t best = 0;
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (rank(rows[i]) > rank(rows[best])) best = i;

  std::string report;
  if (common.format == "json") {
    nlohmann::json out = {{"scenario", scenario_path}, {"profile", profile.file}, {"points", rows}, {"best", best}};
    report = out.dump(2) + "\n";
  } else {
    std::ostringstream o;
    o << "pipeplan sweep: " << scenarios.front().name << ", " << rows.size() << " points (profile " << profile.file << ")";
    if (replications > 1)
      o << "; each the mean of " << replications << " seeds, +- their cv, step times the first seed's";
    o << "\n\n";
    char line[512];
    std::string header;
    for (const auto& axis : axes) {
      std::snprintf(line, sizeof line, "%-22s ", axis.key.c_str());
      header += line;
    }
    o << header << (across_nodes ? "job samples/s" : "  samples/s") << (replications > 1 ? "         " : "")
      << (by_tokens ? "     tokens/s  padding" : "") << (across_nodes ? "  a GPU" : "")
      << "  step mean ms  step p90 ms   vs synthetic  bottleneck\n";
    bool any_edge = false;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::string knobs;
      for (const auto& axis : axes) {
        std::snprintf(line, sizeof line, "%-22s ", display(rows[i]["set"][axis.key]).c_str());
        knobs += line;
      }
      const auto& r = rows[i]["result"];
      std::string rate_cell = sim::with_thousands(rate(rows[i]));
      if (replications > 1) {
        char cv[32];
        std::snprintf(cv, sizeof cv, " +-%4.1f%%", 100.0 * r["replications"]["samples_per_s"]["cv"].get<double>());
        rate_cell += cv;
      }
      if (by_tokens) {
        char cell[64];
        std::snprintf(cell, sizeof cell, " %12s  %6.0f%%", sim::with_thousands(tokens(rows[i])).c_str(),
                      100.0 * r["sequence"]["padding_fraction"].get<double>());
        rate_cell += cell;
      }
      if (across_nodes) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "  %5.0f", rate(rows[i]) / gpus(rows[i]));
        rate_cell += cell;
      }
      // "~": the step time rises steeply around the p90 (sim/step_stats.hpp), so it is the least certain figure
      const bool edge = r.value("step_p90_on_edge", false);
      any_edge = any_edge || edge;
      std::snprintf(line, sizeof line, "%s %*s  %12.1f  %11.1f%c  %11.0f%%  %s%s\n", knobs.c_str(), (replications > 1 ? 19 : 10) + (by_tokens ? 23 : 0) + (across_nodes ? 10 : 0),
                    rate_cell.c_str(),
                    1e3 * r["step_time_s"]["mean"].get<double>(), 1e3 * r["step_time_s"]["p90"].get<double>(), edge ? '~' : ' ',
                    100 * r["synthetic_baseline"]["ratio"].get<double>(), r["bottleneck"]["stage"].get<std::string>().c_str(),
                    i == best ? "   <- best" : "");
      o << line;
    }
    if (any_edge)
      o << "\n~ the p90 is on an edge: the step time rises 1.3x or more from the p85 to the p95, so a small change in how\n"
           "  many steps wait moves it between the p80 and the p95 (pipeplan simulate names them)\n";
    report = o.str();
  }
  emit_report(common, report);
  return 0;
}

}  // namespace pipeplan::cli
