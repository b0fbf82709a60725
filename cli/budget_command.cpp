// pipeplan budget [SCENARIO.json] [--gpus N,N,...] [--profile P] [--set K=V]... [--format text|json]
//
// Storage throughput a cluster needs so that input never holds the GPUs back: every GPU
// consumes samples at its synthetic-data rate (batch_size / step_s), and every page-cache
// miss is a read of sample_bytes from the shared store. Closed form, no simulation: the
// demand side of the budget, to set against what the store (fio's numbers) delivers.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/inputs.hpp"
#include "models/input_error.hpp"
#include "sim/report.hpp"

namespace po = boost::program_options;

namespace pipeplan::cli {

namespace {

struct BudgetRow {
  long long gpus;
  double samples_per_s, read_bytes_per_s, read_iops, epoch_s;
};

// One GPU's synthetic-data rate: its step (a sequence batch's mean shape), or the training loop's Python (and its
// syncs' wait for the kernels launched last) when that is longer.
double per_gpu_samples_per_s(const Scenario& s) {
  return s.mean_samples_per_batch() / std::max(s.training.saturated_step_s() * s.mean_step_factor(),
                                               s.loop_host_s() + s.sync_tail_s_per_step());
}

// Pure: the demand of `gpus` GPUs running at the scenario's synthetic-data rate.
BudgetRow budget_for(const Scenario& s, long long gpus) {
  const double per_gpu = per_gpu_samples_per_s(s);
  const double miss = 1.0 - s.storage.page_cache_hit_ratio;
  BudgetRow r;
  r.gpus = gpus;
  r.samples_per_s = per_gpu * static_cast<double>(gpus);
  r.read_bytes_per_s = r.samples_per_s * miss * s.dataset.sample_bytes.mean;
  r.read_iops = r.samples_per_s * miss;
  r.epoch_s = static_cast<double>(s.dataset.num_samples) / r.samples_per_s;
  return r;
}

}  // namespace

int budget_command(int argc, char** argv) {
  po::options_description options("pipeplan budget [SCENARIO.json] [--gpus N,N,...] [options]\n\n"
                                  "Storage read bandwidth and IOPS a cluster needs so that input never holds the GPUs back:\n"
                                  "each GPU at its synthetic-data rate (batch_size / step_s), each page-cache miss a read of\n"
                                  "dataset.sample_bytes. Set storage.page_cache_hit_ratio for the share served from memory.\n\noptions");
  CommonOptions common;
  std::string gpu_list = "1,8,64,512,4096";
  add_common_options(options, common);
  options.add_options()("gpus", po::value(&gpu_list), "GPU counts to budget for (default 1,8,64,512,4096)");
  if (!parse_command_line(argc, argv, options, common)) return 0;
  std::vector<long long> counts;
  std::stringstream in(gpu_list);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long n = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 10000000)
      throw InputError("", "--gpus", "\"" + gpu_list + "\"", "a comma-separated list of GPU counts in [1, 10000000]");
    counts.push_back(n);
  }
  if (counts.empty()) throw InputError("", "--gpus", "\"\"", "at least one GPU count");

  const Profile profile = load_profile(common.profile_path);
  const Scenario s = load_scenario(common, profile);
  std::vector<BudgetRow> rows;
  for (long long n : counts) rows.push_back(budget_for(s, n));

  std::string report;
  if (common.format == "json") {
    nlohmann::json out = {{"scenario", s.name},
                          {"per_gpu_samples_per_s", per_gpu_samples_per_s(s)},
                          {"page_cache_hit_ratio", s.storage.page_cache_hit_ratio},
                          {"sample_bytes", s.dataset.sample_bytes.mean},
                          {"rows", nlohmann::json::array()}};
    for (const auto& r : rows)
      out["rows"].push_back({{"gpus", r.gpus}, {"samples_per_s", r.samples_per_s}, {"read_bytes_per_s", r.read_bytes_per_s},
                             {"read_iops", r.read_iops}, {"epoch_s", r.epoch_s}});
    report = out.dump(2) + "\n";
  } else {
    std::ostringstream o;
    char line[256];
    std::snprintf(line, sizeof line,
                  "pipeplan budget: %s: each GPU takes %s samples/s at its synthetic-data rate; %.0f%% of sample bytes from "
                  "storage, %s bytes each\n\n",
                  s.name.c_str(), sim::with_thousands(per_gpu_samples_per_s(s)).c_str(),
                  100.0 * (1.0 - s.storage.page_cache_hit_ratio), sim::with_thousands(s.dataset.sample_bytes.mean).c_str());
    o << line << "      GPUs      samples/s   read GB/s   read IOPS   epoch\n";
    for (const auto& r : rows) {
      std::snprintf(line, sizeof line, r.epoch_s < 10 ? "%10lld %14s %11.2f %11s %7.2f s\n" : "%10lld %14s %11.2f %11s %7.0f s\n",
                    r.gpus, sim::with_thousands(r.samples_per_s).c_str(), r.read_bytes_per_s / 1e9,
                    sim::with_thousands(r.read_iops).c_str(), r.epoch_s);
      o << line;
    }
    report = o.str();
  }
  emit_report(common, report);
  return 0;
}

}  // namespace pipeplan::cli
