// pipeplan simulate [SCENARIO.json] [--profile P] [--steps N] [--seed S] [--set K=V]...
//                   [--replications R] [--jobs J] [--format text|json] [--trace OUT.json] [--output FILE]
#include <unistd.h>

#include <algorithm>
#include <string>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/forked.hpp"
#include "cli/inputs.hpp"
#include "models/input_error.hpp"
#include "sim/replications.hpp"

namespace po = boost::program_options;

namespace pipeplan::cli {

namespace {

// --replications R > 1: the scenario with seeds S..S+R-1, each in a forked child; the report is
// the first seed's, with the runs' mean and spread added ("replications").
std::string replicated_report(const CommonOptions& common, const Profile& profile, const Scenario& scenario,
                              int replications, int jobs, const std::string& trace_path) {
  std::vector<ForkedRun> runs = seed_runs(scenario, replications);
  runs.front().trace_path = trace_path;
  std::vector<std::uint64_t> seeds;
  for (const auto& r : runs) seeds.push_back(r.scenario.seed);
  const auto reports = simulate_forked(runs, profile, common.steps, jobs, common.format == "text");
  std::vector<nlohmann::json> jsons;
  for (const auto& r : reports) jsons.push_back(r.report);
  const nlohmann::json summary = sim::replication_summary(jsons, seeds);
  if (common.format == "json") {
    nlohmann::json out = jsons.front();
    out["replications"] = summary;
    return out.dump(2) + "\n";
  }
  return reports.front().text + sim::replication_text(summary);
}

}  // namespace

int simulate_command(int argc, char** argv) {
  po::options_description options("pipeplan simulate [SCENARIO.json] [options]\n\n"
                                  "Simulates the scenario's input pipeline and training loop and names the stage that\n"
                                  "sets the step time. Without SCENARIO, the bundled default scenario runs on the\n"
                                  "bundled default profile. Scenario keys: docs/scenario.md.\n\noptions");
  CommonOptions common;
  std::string trace_path;
  int replications = 1;
  int jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  add_common_options(options, common);
  options.add_options()
      ("trace", po::value(&trace_path), "write a Chrome/Perfetto trace to this file (with --replications: the first seed's run)")
      ("replications", po::value(&replications),
       "simulate R seeds (the scenario's seed and the next R-1) and report their mean and spread (default 1)")
      ("jobs,j", po::value(&jobs), "with --replications: simulations at once (default: the number of cores)");
  if (!parse_command_line(argc, argv, options, common)) return 0;
  if (replications < 1 || replications > 1000)
    throw InputError("", "--replications", std::to_string(replications), "an integer in [1, 1000]");
  if (jobs < 1 || jobs > 1024) throw InputError("", "--jobs", std::to_string(jobs), "an integer in [1, 1024]");

  const Profile profile = load_profile(common.profile_path);
  const Scenario scenario = load_scenario(common, profile);

  if (replications > 1) {
    emit_report(common, replicated_report(common, profile, scenario, replications, jobs, trace_path));
    return 0;
  }
  const ForkedReport r = simulate_once({scenario, trace_path}, profile, common.steps, common.format == "text");
  emit_report(common, common.format == "json" ? r.report.dump(2) + "\n" : r.text);
  return 0;
}

}  // namespace pipeplan::cli
