// pipeplan_bench: how fast `pipeplan simulate` runs the bundled default scenario (one GPU,
// 8 workers), and how its wall time grows with steps; then the same scenario read cold from storage
// (storage.page_cache_hit_ratio=0), whose reads went through a SimGrid disk that grew quadratically with
// steps until the seventeenth session, sample by sample and batch by batch (storage.worker_reads); and the bundled
// sequence example, padded and packed (a batch's shape drawn from its samples' lengths). A
// benchmark, not a test: it prints figures and the targets beside them; it fails nothing.
//   build/tests/pipeplan_bench [STEPS...]   (default: 1000 10000 100000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "run_pipeplan.hpp"

namespace {

// Best-of-3 wall time of `pipeplan simulate --steps N` with `extra` arguments for each N, printed as a table;
// returns false when a run failed. Prints the two targets for the 10k and 100k rows.
bool bench(const std::vector<long>& steps_list, const std::vector<std::string>& extra) {
  std::printf("%10s %12s %16s %12s\n", "steps", "wall_s", "steps_per_wall_s", "vs_previous");
  double previous_wall = 0;
  long previous_steps = 0;
  double wall_10k = 0, wall_100k = 0;
  for (long steps : steps_list) {
    double best = 1e30;
    for (int repeat = 0; repeat < 3; ++repeat) {  // best of 3: the machine's noise is one-sided
      std::vector<std::string> args = {"simulate", "--steps", std::to_string(steps), "--format", "json"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = pipeplan::test::run_pipeplan(args);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r.exit_code != 0) {
        std::fprintf(stderr, "pipeplan simulate failed: %s", r.err.c_str());
        return false;
      }
      best = std::min(best, wall);
    }
    char growth[64] = "";
    if (previous_steps) std::snprintf(growth, sizeof growth, "%.2fx for %.0fx steps", best / previous_wall, double(steps) / previous_steps);
    std::printf("%10ld %12.3f %16.0f %12s\n", steps, best, steps / best, growth);
    if (steps == 10000) wall_10k = best;
    if (steps == 100000) wall_100k = best;
    previous_wall = best;
    previous_steps = steps;
  }
  if (wall_10k > 0) std::printf("target: 10,000 steps under 1 s: %.3f s (%s)\n", wall_10k, wall_10k < 1.0 ? "met" : "NOT met");
  if (wall_10k > 0 && wall_100k > 0)
    std::printf("target: 100,000 steps within 11x of 10,000: %.2fx (%s)\n", wall_100k / wall_10k, wall_100k / wall_10k <= 11 ? "met" : "NOT met");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> steps_list;
  for (int i = 1; i < argc; ++i) steps_list.push_back(std::strtol(argv[i], nullptr, 10));
  if (steps_list.empty()) steps_list = {1000, 10000, 100000};
  std::printf("the default scenario (warm page cache)\n");
  if (!bench(steps_list, {})) return 1;
  // cold workers alternate reads and decode (storage.worker_reads=per_sample) in up to storage.read_pieces_per_batch
  // pieces a batch (4 by default since the forty-sixth session); one piece a sample (64) and the batch-at-once order
  // beside it show what the grain costs
  std::printf("\nthe default scenario read cold (--set storage.page_cache_hit_ratio=0), in 4 pieces a batch\n");
  if (!bench(steps_list, {"--set", "storage.page_cache_hit_ratio=0"})) return 1;
  std::printf("\nthe same, one piece a sample (--set storage.read_pieces_per_batch=64)\n");
  if (!bench(steps_list, {"--set", "storage.page_cache_hit_ratio=0", "--set", "storage.read_pieces_per_batch=64"}))
    return 1;
  std::printf("\nthe same, each batch's files read at once (--set storage.worker_reads=per_batch)\n");
  if (!bench(steps_list, {"--set", "storage.page_cache_hit_ratio=0", "--set", "storage.worker_reads=per_batch"})) return 1;
  // a sequence job draws every sample's length for each batch's shape (scenarios/lm-sequences.json: 32 a batch,
  // padded to the longest); packing draws until its rows are full (about 82 samples a batch there)
  const std::string lm = pipeplan::test::test_data("../../scenarios/lm-sequences.json");
  std::printf("\nscenarios/lm-sequences.json (variable-length token sequences, padded to each batch's longest)\n");
  if (!bench(steps_list, {lm})) return 1;
  std::printf("\nthe same packed (--set sequence.collate=pack)\n");
  if (!bench(steps_list, {lm, "--set", "sequence.collate=pack"})) return 1;
  return 0;
}
