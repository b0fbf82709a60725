// pipeplan simulate [SCENARIO.json] [--profile P] [--steps N] [--seed S] [--set K=V]...
//                   [--format text|json] [--trace OUT.json]
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/inputs.hpp"
#include "models/atomic_file.hpp"
#include "models/input_error.hpp"
#include "models/json_reader.hpp"
#include "models/profile.hpp"
#include "models/scenario.hpp"
#include "sim/report.hpp"
#include "sim/simulation.hpp"

namespace po = boost::program_options;

namespace pipeplan::cli {

int simulate_command(int argc, char** argv) {
  po::options_description options("pipeplan simulate [SCENARIO.json] [options]\n\n"
                                  "Simulates the scenario's input pipeline and training loop and names the stage that\n"
                                  "sets the step time. Without SCENARIO, the bundled default scenario runs on the\n"
                                  "bundled default profile. Scenario keys: docs/scenario.md.\n\noptions");
  std::string profile_path, format = "text", trace_path, output_path;
  std::vector<std::string> sets;
  long long steps = 0, seed = -1;
  options.add_options()
      ("help,h", "show this help")
      ("profile", po::value(&profile_path), "hardware profile JSON (default: the bundled H200 profile)")
      ("steps", po::value(&steps), "training steps to simulate (default: the scenario's training.steps)")
      ("seed", po::value(&seed), "seed of every random draw (default: the scenario's seed)")
      ("set", po::value(&sets)->composing(), "override a scenario key: --set loader.num_workers=8 (repeatable)")
      ("format", po::value(&format), "text or json")
      ("trace", po::value(&trace_path), "write a Chrome/Perfetto trace to this file")
      ("output,o", po::value(&output_path), "write the report to this file instead of stdout");
  po::options_description hidden;
  std::vector<std::string> positional;
  hidden.add_options()("scenario", po::value(&positional));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description pos;
  pos.add("scenario", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return 0;
  }
  if (positional.size() > 1) throw InputError("", "command line", "\"" + positional[1] + "\"", "one scenario file at most");
  if (format != "text" && format != "json") throw InputError("", "--format", "\"" + format + "\"", "text or json");
  if (vm.count("steps") && (steps < 1 || steps > kMaxSteps))
    throw InputError("", "--steps", std::to_string(steps), "an integer in [1, " + std::to_string(kMaxSteps) + "]");
  if (vm.count("seed") && seed < 0) throw InputError("", "--seed", std::to_string(seed), "an integer >= 0");

  const Profile profile = load_profile(profile_path);
  const std::string scenario_path = scenario_path_or_default(positional.empty() ? "" : positional[0]);
  const nlohmann::json document = load_scenario_document(scenario_path, sets);
  Scenario scenario = parse_scenario(document, scenario_path, profile);
  if (vm.count("seed")) scenario.seed = static_cast<std::uint64_t>(seed);
  check_simulation_size(scenario, steps);

  sim::SimOptions sim_options;
  sim_options.steps = steps;
  sim_options.record_trace = !trace_path.empty();
  sim::TraceRecorder trace(sim_options.record_trace);
  sim::SimResult result = sim::simulate(scenario, profile, sim_options, trace);
  const sim::Diagnosis diagnosis = sim::diagnose(result, scenario, profile);

  const std::string report = format == "json" ? sim::to_json(result, diagnosis, scenario, profile).dump(2) + "\n"
                                              : sim::to_text(result, diagnosis, scenario, profile);
  if (!trace_path.empty()) {
    const std::string error = trace.write(trace_path);
    if (!error.empty()) throw std::runtime_error(error);
    if (trace.truncated()) std::fprintf(stderr, "pipeplan simulate: trace truncated at its event limit; simulate fewer steps\n");
  }
  if (!output_path.empty()) {
    const std::string error = write_file_atomically(output_path, report);
    if (!error.empty()) throw std::runtime_error(error);
  } else {
    std::fwrite(report.data(), 1, report.size(), stdout);
  }
  return 0;
}

}  // namespace pipeplan::cli
