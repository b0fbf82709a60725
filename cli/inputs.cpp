#include "cli/inputs.hpp"

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "cli/paths.hpp"
#include "models/atomic_file.hpp"
#include "models/input_error.hpp"
#include "models/json_reader.hpp"

namespace pipeplan::cli {

Profile load_profile(const std::string& path) {
  const std::string default_path = default_profile_path();
  Profile fallback = parse_profile(read_json_file(default_path), default_path, nullptr);
  if (path.empty() || path == default_path) return fallback;
  return parse_profile(read_json_file(path), path, &fallback);
}

std::string scenario_path_or_default(const std::string& path) { return path.empty() ? default_scenario_path() : path; }

nlohmann::json load_scenario_document(const std::string& path, const std::vector<std::string>& sets) {
  const std::string file = scenario_path_or_default(path);
  nlohmann::json document = read_json_file(file);
  if (!document.is_object()) throw InputError(file, "", show_value(document), "a JSON object (a pipeplan scenario)");
  for (const auto& assignment : sets) apply_override(document, assignment);
  return document;
}

void check_simulation_size(const Scenario& scenario, long long steps) {
  const std::int64_t n = steps > 0 ? steps : scenario.training.steps;
  const double activities = estimated_activities(scenario, n);
  if (activities > kMaxSimulatedActivities) {
    char value[128];
    std::snprintf(value, sizeof value, "%lld steps x %d GPUs (about %.1e activities)", static_cast<long long>(n),
                  scenario.simulated_ranks(), activities);
    throw InputError(scenario.file, "training.steps", value,
                     "a run of at most about 5e7 activities (two minutes of wall time): fewer steps, GPUs, simulated "
                     "nodes or DDP buckets");
  }
}

namespace po = boost::program_options;

void add_common_options(po::options_description& options, CommonOptions& c) {
  options.add_options()
      ("help,h", "show this help")
      ("profile", po::value(&c.profile_path), "hardware profile JSON (default: the bundled H200 profile)")
      ("steps", po::value(&c.steps), "training steps to simulate (default: the scenario's training.steps)")
      ("seed", po::value(&c.seed), "seed of every random draw (default: the scenario's seed)")
      ("set", po::value(&c.sets)->composing(), "override a scenario key: --set loader.num_workers=8 (repeatable)")
      ("format", po::value(&c.format), "text or json")
      ("output,o", po::value(&c.output_path), "write the report to this file instead of stdout");
}

bool parse_command_line(int argc, char** argv, const po::options_description& options, CommonOptions& c) {
  po::options_description hidden;
  hidden.add_options()("scenario", po::value(&c.positional));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("scenario", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return false;
  }
  if (c.positional.size() > 1) throw InputError("", "command line", "\"" + c.positional[1] + "\"", "one scenario file at most");
  if (c.format != "text" && c.format != "json") throw InputError("", "--format", "\"" + c.format + "\"", "text or json");
  if (vm.count("steps") && (c.steps < 1 || c.steps > kMaxSteps))
    throw InputError("", "--steps", std::to_string(c.steps), "an integer in [1, " + std::to_string(kMaxSteps) + "]");
  if (vm.count("seed") && c.seed < 0) throw InputError("", "--seed", std::to_string(c.seed), "an integer >= 0");
  return true;
}

Scenario load_scenario(const CommonOptions& c, const Profile& profile, const std::vector<std::string>& extra_sets) {
  const std::string path = scenario_path_or_default(c.positional.empty() ? "" : c.positional[0]);
  std::vector<std::string> sets = c.sets;
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
  Scenario scenario = parse_scenario(load_scenario_document(path, sets), path, profile);
  if (c.seed >= 0) scenario.seed = static_cast<std::uint64_t>(c.seed);
  check_simulation_size(scenario, c.steps);
  return scenario;
}

void emit_report(const CommonOptions& c, const std::string& report) {
  if (c.output_path.empty()) {
    std::fwrite(report.data(), 1, report.size(), stdout);
    return;
  }
  const std::string error = write_file_atomically(c.output_path, report);
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace pipeplan::cli
