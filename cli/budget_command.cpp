// pipeplan budget [SCENARIO.json] [--gpus N,N,...] [--profile P] [--set K=V]... [--format text|json]
//
// Storage throughput a cluster needs so that input never holds the GPUs back: every GPU
// consumes samples at its synthetic-data rate (batch_size / step_s), every page-cache
// miss is a read of sample_bytes from the shared store, and every file is opened (a metadata operation, cached data
// or not; dataset.samples_per_file samples a file). Closed form, no simulation: the demand side of the budget, and
// with --store-read-bytes-per-s / --store-read-iops (fio's numbers for the store, all clients together) and
// --store-metadata-ops-per-s (the metadata server's opens a second) the share of it the store serves and the most
// GPUs it keeps fed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
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

// A shared store's capacity in fio's terms, and its metadata server's opens a second (0: not given).
struct Store {
  double read_bytes_per_s = 0.0, read_iops = 0.0, metadata_ops_per_s = 0.0;
  bool given() const { return read_bytes_per_s > 0.0 || read_iops > 0.0 || metadata_ops_per_s > 0.0; }
};

// A demand on the store: bytes and reads a second from the device, files opened a second.
struct Demand {
  double read_bytes_per_s = 0.0, read_iops = 0.0, opens_per_s = 0.0;
};

struct BudgetRow {
  long long gpus;
  double samples_per_s;
  Demand demand;
  double epoch_s;
  double store_share = 1.0;  // of that demand a shared store of the given capacity serves (1: all of it)
};

// Pure: the smallest capacity / demand over the limits `store` gives and `demand` asks of (infinite where none
// applies: nothing it limits is asked for).
double tightest_ratio(const Store& store, const Demand& demand) {
  double ratio = std::numeric_limits<double>::infinity();
  for (const auto& [capacity, wanted] : {std::pair{store.read_bytes_per_s, demand.read_bytes_per_s},
                                         std::pair{store.read_iops, demand.read_iops},
                                         std::pair{store.metadata_ops_per_s, demand.opens_per_s}})
    if (capacity > 0.0 && wanted > 0.0) ratio = std::min(ratio, capacity / wanted);
  return ratio;
}

// Pure: the share of `demand` that `store` serves: its tighter limit over the demand, at most 1. The GPUs then run
// at that share of their synthetic-data rate (input-bound beyond it).
double store_share(const Store& store, const Demand& demand) { return std::min(1.0, tightest_ratio(store, demand)); }

// Pure: the most GPUs `store` feeds at their synthetic-data rate, each making `per_gpu`'s demand (a GPU count; -1
// when it feeds any number: nothing is asked of it).
long long gpus_fed(const Store& store, const Demand& per_gpu) {
  const double most = tightest_ratio(store, per_gpu);
  return std::isinf(most) ? -1 : static_cast<long long>(std::floor(most + 1e-9));
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
  r.demand = {r.samples_per_s * miss * s.dataset.sample_bytes.mean, r.samples_per_s * miss,
              r.samples_per_s * s.opens_per_sample()};
  r.store_share = store_share(store, r.demand);
  r.epoch_s = static_cast<double>(s.dataset.num_samples) / (r.samples_per_s * r.store_share);
  return r;
}

}  // namespace

int budget_command(int argc, char** argv) {
  po::options_description options("pipeplan budget [SCENARIO.json] [--gpus N,N,...] [options]\n\n"
                                  "Storage read bandwidth and IOPS a cluster needs so that input never holds the GPUs back:\n"
                                  "each GPU at its synthetic-data rate (batch_size / step_s), each page-cache miss a read of\n"
                                  "dataset.sample_bytes, each file an open (dataset.samples_per_file samples a file). Set\n"
                                  "storage.page_cache_hit_ratio for the share served from memory.\n\noptions");
  CommonOptions common;
  const std::string default_gpu_list = "1,8,64,512,4096";
  std::string gpu_list = default_gpu_list;
  add_common_options(options, common);
  Store store;
  options.add_options()("gpus", po::value(&gpu_list),
                        "GPU counts to budget for (default 1,8,64,512,4096 and the scenario's node.gpus x cluster.nodes)")(
      "store-read-bytes-per-s", po::value(&store.read_bytes_per_s),
      "a shared store's read bandwidth (fio's bw, all clients together): which GPU counts it feeds, and at what share")(
      "store-read-iops", po::value(&store.read_iops), "the shared store's read IOPS (fio's iops, all clients together)")(
      "store-metadata-ops-per-s", po::value(&store.metadata_ops_per_s),
      "the shared store's metadata server: file opens a second, all clients together (mdtest's file stat or open rate)");
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
                             {"--store-read-iops", store.read_iops},
                             {"--store-metadata-ops-per-s", store.metadata_ops_per_s}})
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
  const long long fed = gpus_fed(store, one.demand);

  std::string report;
  if (common.format == "json") {
    nlohmann::json out = {{"scenario", s.name},
                          {"per_gpu_samples_per_s", per_gpu_samples_per_s(s)},
                          {"page_cache_hit_ratio", s.storage.page_cache_hit_ratio},
                          {"sample_bytes", s.dataset.sample_bytes.mean},
                          {"samples_per_file", s.dataset.samples_per_file},
                          {"rows", nlohmann::json::array()}};
    if (store.given())
      out["store"] = {{"read_bytes_per_s", store.read_bytes_per_s}, {"read_iops", store.read_iops},
                      {"metadata_ops_per_s", store.metadata_ops_per_s},
                      {"gpus_fed", fed < 0 ? nlohmann::json(nullptr) : nlohmann::json(fed)}};
    for (const auto& r : rows) {
      nlohmann::json row = {{"gpus", r.gpus},
                            {"samples_per_s", r.samples_per_s},
                            {"read_bytes_per_s", r.demand.read_bytes_per_s},
                            {"read_iops", r.demand.read_iops},
                            {"opens_per_s", r.demand.opens_per_s},
                            {"epoch_s", r.epoch_s}};
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
    o << line << "      GPUs      samples/s   read GB/s   read IOPS      opens/s   epoch"
      << (store.given() ? "   store serves" : "") << "\n";
    for (const auto& r : rows) {
      std::snprintf(line, sizeof line,
                    r.epoch_s < 10 ? "%10lld %14s %11.2f %11s %12s %7.2f s" : "%10lld %14s %11.2f %11s %12s %7.0f s",
                    r.gpus, sim::with_thousands(r.samples_per_s).c_str(), r.demand.read_bytes_per_s / 1e9,
                    sim::with_thousands(r.demand.read_iops).c_str(), sim::with_thousands(r.demand.opens_per_s).c_str(),
                    r.epoch_s);
      o << line;
      if (store.given()) {
        std::snprintf(line, sizeof line, "   %11.0f%%", 100.0 * r.store_share);
        o << line;
      }
      o << "\n";
    }
    if (store.given()) {
      // what the store's capacity means for the cluster: how many GPUs it keeps fed, and the epoch beyond that
      std::vector<std::string> parts;  // the capacities given, in the table's order
      if (store.read_bytes_per_s > 0) parts.push_back(sim::with_thousands(store.read_bytes_per_s / 1e6) + " MB/s");
      if (store.read_iops > 0) parts.push_back(sim::with_thousands(store.read_iops) + " read IOPS");
      if (store.metadata_ops_per_s > 0) parts.push_back(sim::with_thousands(store.metadata_ops_per_s) + " opens/s");
      std::string capacity;
      for (std::size_t i = 0; i < parts.size(); ++i)
        capacity += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
      o << "\n  a store of " << capacity << " feeds "
        << (fed < 0 ? "any number of GPUs (nothing is asked of it)" : sim::with_thousands(static_cast<double>(fed)) +
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
