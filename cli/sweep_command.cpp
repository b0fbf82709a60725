// pipeplan sweep [SCENARIO.json] --vary KEY=V1,V2,... [--vary ...] [--profile P] [--steps N]
//                [--seed S] [--set K=V]... [--jobs J] [--format text|json]
//
// What-if over PyTorch's knobs: the cartesian product of the --vary lists, one simulation per
// point. SimGrid allows one simulation per process, so each point runs in a forked child
// (which also runs points in parallel); the parent validates every point first, so bad input
// is reported before anything runs, and never half-way through.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/inputs.hpp"
#include "models/input_error.hpp"
#include "sim/report.hpp"
#include "sim/simulation.hpp"

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

// Runs in the child: one simulation, its JSON report written to `out_path`.
[[noreturn]] void run_point(const Scenario& scenario, const Profile& profile, std::int64_t steps, const std::string& out_path) {
  int code = 0;
  try {
    sim::SimOptions options;
    options.steps = steps;
    sim::TraceRecorder trace(false);
    sim::SimResult result = sim::simulate(scenario, profile, options, trace);
    const sim::Diagnosis diagnosis = sim::diagnose(result, scenario, profile);
    std::ofstream(out_path) << sim::to_json(result, diagnosis, scenario, profile).dump() << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeplan sweep: %s\n", e.what());
    code = 1;
  }
  std::fflush(nullptr);
  _exit(code);
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
  add_common_options(options, common);
  options.add_options()
      ("vary", po::value(&varies)->composing(), "a key and its values: --vary loader.num_workers=2,4,8 (repeatable: the product)")
      ("jobs,j", po::value(&jobs), "simulations at once (default: the number of cores)");
  if (!parse_command_line(argc, argv, options, common)) return 0;
  if (varies.empty()) throw InputError("", "--vary", "nothing", "at least one --vary KEY=V1,V2,...");
  if (jobs < 1 || jobs > 1024) throw InputError("", "--jobs", std::to_string(jobs), "an integer in [1, 1024]");

  std::vector<Axis> axes;
  for (const auto& v : varies) axes.push_back(parse_axis(v));
  const auto points = cartesian(axes);
  if (points.size() > 10000) throw InputError("", "--vary", std::to_string(points.size()) + " points", "at most 10,000 points");

  // Validate every point before running any.
  const Profile profile = load_profile(common.profile_path);
  const std::string scenario_path = scenario_path_or_default(common.positional.empty() ? "" : common.positional[0]);
  std::vector<Scenario> scenarios;
  for (const auto& point : points) scenarios.push_back(load_scenario(common, profile, point));

  // Run: at most `jobs` children at once, each writing its report to a temporary file.
  char dir_template[] = "/tmp/pipeplan-sweep-XXXXXX";
  if (!mkdtemp(dir_template)) throw std::runtime_error(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string dir = dir_template;
  std::vector<std::string> out_paths(points.size());
  std::map<pid_t, std::size_t> running;
  std::vector<int> exit_codes(points.size(), -1);
  std::fflush(nullptr);
  std::size_t next = 0;
  while (next < points.size() || !running.empty()) {
    while (next < points.size() && static_cast<int>(running.size()) < jobs) {
      out_paths[next] = dir + "/point-" + std::to_string(next) + ".json";
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
      if (pid == 0) run_point(scenarios[next], profile, common.steps, out_paths[next]);
      running[pid] = next++;
    }
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    auto it = running.find(done);
    if (it == running.end()) continue;
    exit_codes[it->second] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    running.erase(it);
  }

  nlohmann::json rows = nlohmann::json::array();
  std::string failure;
  for (std::size_t i = 0; i < points.size(); ++i) {
    nlohmann::json set = nlohmann::json::object();
    for (const auto& a : points[i]) set[a.substr(0, a.find('='))] = point_value(a);
    nlohmann::json result;
    std::ifstream in(out_paths[i]);
    if (exit_codes[i] == 0 && in) result = nlohmann::json::parse(in, nullptr, false);
    std::remove(out_paths[i].c_str());
    if (exit_codes[i] != 0 || result.is_discarded() || !result.is_object()) {
      if (failure.empty()) failure = "point " + std::to_string(i) + " (" + set.dump() + ") failed with exit code " + std::to_string(exit_codes[i]);
      continue;
    }
    rows.push_back({{"set", set}, {"result", result}});
  }
  ::rmdir(dir.c_str());
  if (!failure.empty()) throw std::runtime_error(failure);

  std::size_t best = 0;
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (rows[i]["result"]["throughput"]["samples_per_s"].get<double>() > rows[best]["result"]["throughput"]["samples_per_s"].get<double>())
      best = i;

  std::string report;
  if (common.format == "json") {
    nlohmann::json out = {{"scenario", scenario_path}, {"profile", profile.file}, {"points", rows}, {"best", best}};
    report = out.dump(2) + "\n";
  } else {
    std::ostringstream o;
    o << "pipeplan sweep: " << scenarios.front().name << ", " << rows.size() << " points (profile " << profile.file << ")\n\n";
    char line[512];
    std::string header;
    for (const auto& axis : axes) {
      std::snprintf(line, sizeof line, "%-22s ", axis.key.c_str());
      header += line;
    }
    o << header << "  samples/s  step mean ms  step p90 ms  vs synthetic  bottleneck\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::string knobs;
      for (const auto& axis : axes) {
        std::snprintf(line, sizeof line, "%-22s ", display(rows[i]["set"][axis.key]).c_str());
        knobs += line;
      }
      const auto& r = rows[i]["result"];
      std::snprintf(line, sizeof line, "%s %10s  %12.1f  %11.1f  %11.0f%%  %s%s\n", knobs.c_str(),
                    sim::with_thousands(r["throughput"]["samples_per_s"].get<double>()).c_str(),
                    1e3 * r["step_time_s"]["mean"].get<double>(), 1e3 * r["step_time_s"]["p90"].get<double>(),
                    100 * r["synthetic_baseline"]["ratio"].get<double>(), r["bottleneck"]["stage"].get<std::string>().c_str(),
                    i == best ? "   <- best" : "");
      o << line;
    }
    report = o.str();
  }
  emit_report(common, report);
  return 0;
}

}  // namespace pipeplan::cli
