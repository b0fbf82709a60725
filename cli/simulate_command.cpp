// pipeplan simulate [SCENARIO.json] [--profile P] [--steps N] [--seed S] [--set K=V]...
//                   [--format text|json] [--trace OUT.json] [--output FILE]
#include <cstdio>
#include <stdexcept>
#include <string>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/inputs.hpp"
#include "sim/report.hpp"
#include "sim/simulation.hpp"

namespace po = boost::program_options;

namespace pipeplan::cli {

int simulate_command(int argc, char** argv) {
  po::options_description options("pipeplan simulate [SCENARIO.json] [options]\n\n"
                                  "Simulates the scenario's input pipeline and training loop and names the stage that\n"
                                  "sets the step time. Without SCENARIO, the bundled default scenario runs on the\n"
                                  "bundled default profile. Scenario keys: docs/scenario.md.\n\noptions");
  CommonOptions common;
  std::string trace_path;
  add_common_options(options, common);
  options.add_options()("trace", po::value(&trace_path), "write a Chrome/Perfetto trace to this file");
  if (!parse_command_line(argc, argv, options, common)) return 0;

  const Profile profile = load_profile(common.profile_path);
  const Scenario scenario = load_scenario(common, profile);

  sim::SimOptions sim_options;
  sim_options.steps = common.steps;
  sim_options.record_trace = !trace_path.empty();
  sim::TraceRecorder trace(sim_options.record_trace);
  sim::SimResult result = sim::simulate(scenario, profile, sim_options, trace);
  const sim::Diagnosis diagnosis = sim::diagnose(result, scenario, profile);

  const std::string report = common.format == "json" ? sim::to_json(result, diagnosis, scenario, profile).dump(2) + "\n"
                                                     : sim::to_text(result, diagnosis, scenario, profile);
  if (!trace_path.empty()) {
    const std::string error = trace.write(trace_path);
    if (!error.empty()) throw std::runtime_error(error);
    if (trace.truncated()) std::fprintf(stderr, "pipeplan simulate: trace truncated at its event limit; simulate fewer steps\n");
  }
  emit_report(common, report);
  return 0;
}

}  // namespace pipeplan::cli
