// pipeplan budget [SCENARIO.json] [--gpus N,N,...] [--profile P] [--set K=V]... [--format text|json]
//
// Storage throughput a cluster needs so that input never holds the GPUs back: every GPU
// consumes samples at its synthetic-data rate (batch_size / step_s), and every page-cache
// miss is a read of sample_bytes from the shared store. Closed form, no simulation: the
// demand side of the budget, and with --store-read-bytes-per-s / --store-read-iops (fio's numbers for the
// store, all clients together) the share of it the store serves and the most GPUs it keeps fed.
#include <algorithm>
#include <cmath>
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
  double store_share = 1.0;  // of that demand a shared store of the given capacity serves (1: all of it)
};

// A shared store's read capacity in fio's terms (0: not given).
struct Store {
  double read_bytes_per_s = 0.0, read_iops = 0.0;
  bool given() const { return read_bytes_per_s > 0.0 || read_iops > 0.0; }
};

// Pure: the share of a demand of `bytes_per_s` and `iops` that `store` serves: its tighter limit over the demand,
// at most 1. The GPUs then run at that share of their synthetic-data rate (input-bound beyond it).
double store_share(const Store& store, double bytes_per_s, double iops) {
  double share = 1.0;
  if (store.read_bytes_per_s > 0.0 && bytes_per_s > 0.0) share = std::min(share, store.read_bytes_per_s / bytes_per_s);
  if (store.read_iops > 0.0 && iops > 0.0) share = std::min(share, store.read_iops / iops);
  return share;
}

// Pure: the most GPUs `store` feeds at their synthetic-data rate, each reading `bytes_per_s` and `iops` (a GPU
// count; -1 when it feeds any number: nothing is read from it).
long long gpus_fed(const Store& store, double bytes_per_s, double iops) {
  double most = -1.0;
  auto limit = [&](double capacity, double per_gpu) {
    if (capacity > 0.0 && per_gpu > 0.0) most = most < 0.0 ? capacity / per_gpu : std::min(most, capacity / per_gpu);
  };
  limit(store.read_bytes_per_s, bytes_per_s);
  limit(store.read_iops, iops);
  return most < 0.0 ? -1 : static_cast<long long>(std::floor(most + 1e-9));
}

// One GPU's synthetic-data rate: its step (a sequence batch's mean shape), or the training loop's Python (and its
// syncs' wait for the kernels launched last) when that is longer.
double per_gpu_samples_per_s(const Scenario& s) {
  return s.mean_samples_per_batch() / std::max(s.training.saturated_step_s() * s.mean_step_factor(),
                                               s.loop_host_s() + s.sync_tail_s_per_step());
}

// Pure: the demand of `gpus` GPUs running at the scenario's synthetic-data rate.
BudgetRow budget_for(const Scenario& s, long long gpus, const Store& store) {
  const double per_gpu = per_gpu_samples_per_s(s);
  const double miss = 1.0 - s.storage.page_cache_hit_ratio;
  BudgetRow r;
  r.gpus = gpus;
  r.samples_per_s = per_gpu * static_cast<double>(gpus);
  r.read_bytes_per_s = r.samples_per_s * miss * s.dataset.sample_bytes.mean;
  r.read_iops = r.samples_per_s * miss;
  r.store_share = store_share(store, r.read_bytes_per_s, r.read_iops);
  r.epoch_s = static_cast<double>(s.dataset.num_samples) / (r.samples_per_s * r.store_share);
  return r;
}

}  // namespace

int budget_command(int argc, char** argv) {
  po::options_description options("pipeplan budget [SCENARIO.json] [--gpus N,N,...] [options]\n\n"
                                  "Storage read bandwidth and IOPS a cluster needs so that input never holds the GPUs back:\n"
                                  "each GPU at its synthetic-data rate (batch_size / step_s), each page-cache miss a read of\n"
                                  "dataset.sample_bytes. Set storage.page_cache_hit_ratio for the share served from memory.\n\noptions");
  CommonOptions common;
  const std::string default_gpu_list = "1,8,64,512,4096";
  std::string gpu_list = default_gpu_list;
  add_common_options(options, common);
  Store store;
  options.add_options()("gpus", po::value(&gpu_list),
                        "GPU counts to budget for (default 1,8,64,512,4096 and the scenario's node.gpus x cluster.nodes)")(
      "store-read-bytes-per-s", po::value(&store.read_bytes_per_s),
      "a shared store's read bandwidth (fio's bw, all clients together): which GPU counts it feeds, and at what share")(
      "store-read-iops", po::value(&store.read_iops), "the shared store's read IOPS (fio's iops, all clients together)");
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
  for (auto [name, value] : {std::pair<const char*, double>{"--store-read-bytes-per-s", store.read_bytes_per_s},
                             {"--store-read-iops", store.read_iops}})
    if (!(value >= 0.0) || !std::isfinite(value)) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", value);  // nan and inf as themselves
      throw InputError("", name, shown, "a number >= 0 (0: not given)");
    }

  const Profile profile = load_profile(common.profile_path);
  const Scenario s = load_scenario(common, profile);
  // the scenario's own job (node.gpus x cluster.nodes) among the default counts
  if (gpu_list == default_gpu_list && std::find(counts.begin(), counts.end(), s.world_size()) == counts.end()) {
    counts.push_back(s.world_size());
    std::sort(counts.begin(), counts.end());
  }
  std::vector<BudgetRow> rows;
  for (long long n : counts) rows.push_back(budget_for(s, n, store));
  const BudgetRow one = budget_for(s, 1, Store{});
  const long long fed = gpus_fed(store, one.read_bytes_per_s, one.read_iops);

  std::string report;
  if (common.format == "json") {
    nlohmann::json out = {{"scenario", s.name},
                          {"per_gpu_samples_per_s", per_gpu_samples_per_s(s)},
                          {"page_cache_hit_ratio", s.storage.page_cache_hit_ratio},
                          {"sample_bytes", s.dataset.sample_bytes.mean},
                          {"rows", nlohmann::json::array()}};
    if (store.given())
      out["store"] = {{"read_bytes_per_s", store.read_bytes_per_s}, {"read_iops", store.read_iops},
                      {"gpus_fed", fed < 0 ? nlohmann::json(nullptr) : nlohmann::json(fed)}};
    for (const auto& r : rows) {
      nlohmann::json row = {{"gpus", r.gpus}, {"samples_per_s", r.samples_per_s}, {"read_bytes_per_s", r.read_bytes_per_s},
                            {"read_iops", r.read_iops}, {"epoch_s", r.epoch_s}};
      if (store.given()) {
        row["store_share"] = r.store_share;
        row["input_bound_samples_per_s"] = r.samples_per_s * r.store_share;
      }
      out["rows"].push_back(row);
    }
    report = out.dump(2) + "\n";
  } else {
    std::ostringstream o;
    char line[256];
    std::snprintf(line, sizeof line,
                  "pipeplan budget: %s: each GPU takes %s samples/s at its synthetic-data rate; %.0f%% of sample bytes from "
                  "storage, %s bytes each\n\n",
                  s.name.c_str(), sim::with_thousands(per_gpu_samples_per_s(s)).c_str(),
                  100.0 * (1.0 - s.storage.page_cache_hit_ratio), sim::with_thousands(s.dataset.sample_bytes.mean).c_str());
    o << line << "      GPUs      samples/s   read GB/s   read IOPS   epoch" << (store.given() ? "   store serves" : "") << "\n";
    for (const auto& r : rows) {
      std::snprintf(line, sizeof line, r.epoch_s < 10 ? "%10lld %14s %11.2f %11s %7.2f s" : "%10lld %14s %11.2f %11s %7.0f s",
                    r.gpus, sim::with_thousands(r.samples_per_s).c_str(), r.read_bytes_per_s / 1e9,
                    sim::with_thousands(r.read_iops).c_str(), r.epoch_s);
      o << line;
      if (store.given()) {
        std::snprintf(line, sizeof line, "   %11.0f%%", 100.0 * r.store_share);
        o << line;
      }
      o << "\n";
    }
    if (store.given()) {
      // what the store's capacity means for the cluster: how many GPUs it keeps fed, and the epoch beyond that
      o << "\n  a store of " << (store.read_bytes_per_s > 0 ? sim::with_thousands(store.read_bytes_per_s / 1e6) + " MB/s" : "")
        << (store.read_bytes_per_s > 0 && store.read_iops > 0 ? " and " : "")
        << (store.read_iops > 0 ? sim::with_thousands(store.read_iops) + " read IOPS" : "") << " feeds "
        << (fed < 0 ? "any number of GPUs (nothing is read from it)" : sim::with_thousands(static_cast<double>(fed)) +
                                                                          " GPU" + (fed == 1 ? "" : "s") +
                                                                          " at their synthetic-data rate")
        << "; beyond that the GPUs wait for input and the epoch time stops falling (the column is the share of the "
           "demand it serves)\n";
    }
    report = o.str();
  }
  emit_report(common, report);
  return 0;
}

}  // namespace pipeplan::cli
