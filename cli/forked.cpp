#include "cli/forked.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/report.hpp"
#include "sim/simulation.hpp"

namespace pipeplan::cli {

namespace {

// Runs in the child: one simulation, its reports written beside `out_path`.
[[noreturn]] void run_child(const ForkedRun& run, const Profile& profile, long long steps, const std::string& out_path,
                            bool want_text) {
  int code = 0;
  try {
    const ForkedReport r = simulate_once(run, profile, steps, want_text);
    std::ofstream(out_path) << r.report.dump() << "\n";
    if (want_text) std::ofstream(out_path + ".txt") << r.text;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeplan: %s\n", e.what());
    code = 1;
  }
  std::fflush(nullptr);
  _exit(code);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

ForkedReport simulate_once(const ForkedRun& run, const Profile& profile, long long steps, bool want_text) {
  sim::SimOptions options;
  options.steps = steps;
  options.record_trace = !run.trace_path.empty();
  sim::TraceRecorder trace(options.record_trace);
  sim::SimResult result = sim::simulate(run.scenario, profile, options, trace);
  const sim::Diagnosis diagnosis = sim::diagnose(result, run.scenario, profile);
  ForkedReport out{sim::to_json(result, diagnosis, run.scenario, profile),
                   want_text ? sim::to_text(result, diagnosis, run.scenario, profile) : std::string()};
  if (!run.trace_path.empty()) {
    const std::string error = trace.write(run.trace_path);
    if (!error.empty()) throw std::runtime_error(error);
    if (trace.truncated()) std::fprintf(stderr, "pipeplan simulate: trace truncated at its event limit; simulate fewer steps\n");
  }
  return out;
}

Scenario with_steady_window(Scenario scenario, long long steps_override) {
  auto& t = scenario.training;
  if (steps_override > 0) t.steps = steps_override;
  if (scenario.loader.num_workers == 0) return scenario;
  const std::int64_t fill = scenario.prefetch_fill_steps();
  if (t.warmup_steps >= fill) return scenario;
  t.steps = std::max(t.steps + (fill - t.warmup_steps), 2 * fill);
  t.warmup_steps = fill;
  return scenario;
}

std::vector<ForkedRun> seed_runs(const Scenario& scenario, int replications) {
  std::vector<ForkedRun> runs;
  for (int k = 0; k < replications; ++k) {
    runs.push_back({scenario, ""});
    runs.back().scenario.seed = scenario.seed + static_cast<std::uint64_t>(k);
  }
  return runs;
}

std::vector<ForkedReport> simulate_forked(const std::vector<ForkedRun>& runs, const Profile& profile, long long steps,
                                          int parallel, bool want_text) {
  char dir_template[] = "/tmp/pipeplan-runs-XXXXXX";
  if (!mkdtemp(dir_template)) throw std::runtime_error(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string dir = dir_template;
  std::vector<std::string> out_paths(runs.size());
  std::vector<int> exit_codes(runs.size(), -1);
  std::map<pid_t, std::size_t> running;
  std::fflush(nullptr);
  std::size_t next = 0;
  std::string fork_error;  // a failed fork stops new runs; those running are still waited for
  while ((next < runs.size() && fork_error.empty()) || !running.empty()) {
    while (next < runs.size() && fork_error.empty() && static_cast<int>(running.size()) < parallel) {
      out_paths[next] = dir + "/run-" + std::to_string(next) + ".json";
      const pid_t pid = fork();
      if (pid < 0) {
        fork_error = std::string("fork: ") + std::strerror(errno);
        break;
      }
      if (pid == 0) run_child(runs[next], profile, steps, out_paths[next], want_text);
      running[pid] = next++;
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    auto it = running.find(done);
    if (it == running.end()) continue;
    exit_codes[it->second] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    running.erase(it);
  }

  std::vector<ForkedReport> reports(runs.size());
  std::string failure;
  for (std::size_t i = 0; i < next; ++i) {
    nlohmann::json report;
    if (exit_codes[i] == 0) report = nlohmann::json::parse(slurp(out_paths[i]), nullptr, false);
    if (want_text) reports[i].text = slurp(out_paths[i] + ".txt");
    std::remove(out_paths[i].c_str());
    std::remove((out_paths[i] + ".txt").c_str());
    if (exit_codes[i] != 0 || report.is_discarded() || !report.is_object()) {
      if (failure.empty()) failure = "run " + std::to_string(i) + " failed with exit code " + std::to_string(exit_codes[i]);
      continue;
    }
    reports[i].report = std::move(report);
  }
  ::rmdir(dir.c_str());
  if (!fork_error.empty()) throw std::runtime_error(fork_error);
  if (!failure.empty()) throw std::runtime_error(failure);
  return reports;
}

}  // namespace pipeplan::cli
