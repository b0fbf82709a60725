#include "sim/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "models/analytic.hpp"
#include "models/collectives.hpp"

namespace pipeplan::sim {

Diagnosis name_bottleneck(SimResult& result, const Scenario& s, const Profile& p);

namespace {

// The loop's thread has no slack left when its receive, staged copy and Python together fill this share of the
// window (the same line as a GPU busy 90% or more being compute-bound).
constexpr double kMainThreadFullFraction = 0.9;

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * fraction);
  return buf;
}

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, seconds < 0.01 ? "%.2f ms" : "%.1f ms", seconds * 1e3);
  return buf;
}

std::string fixed2(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

bool is_input_stage(const std::string& name) {
  return name == "storage" || name == "metadata" || name == "workers" || name == "main_receive" || name == "pin_thread" || name == "main_inline_load";
}

const StageReport* find(const SimResult& r, const std::string& name) {
  for (const auto& s : r.stages)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

std::string with_thousands(double value) {
  if (!std::isfinite(value)) return "unbounded";
  if (std::fabs(value) >= 1e15) {  // beyond 15 digits commas stop helping (and past 9.2e18 llround overflows)
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
  }
  const long long v = std::llround(value);
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

namespace {

double capacity_of(const std::string& stage, const Scenario& s, const Profile& p) {
  for (const auto& c : stage_capacities(s, p))
    if (c.stage == stage) return c.samples_per_s;
  return -1.0;
}

}  // namespace

std::string suggest(const std::string& stage, const Scenario& s, const Profile& p) {
  const double gpu = capacity_of("gpu_compute", s, p);
  if (stage == "workers" || stage == "main_inline_load") {
    // The fewest workers whose estimated capacity reaches the GPU's, cores shared included.
    Scenario t = s;
    const int limit = std::max(4 * s.node.cpu_cores / s.node.gpus, s.loader.num_workers + 1);
    double best_rate = -1.0;
    int best_n = s.loader.num_workers;
    for (int n = std::max(1, s.loader.num_workers + 1); n <= limit; ++n) {
      t.loader.num_workers = n;
      const double rate = capacity_of("workers", t, p);
      if (rate > best_rate) {
        best_rate = rate;
        best_n = n;
      }
      if (rate >= 0.97 * gpu)  // within 3% of the GPU: more workers only add CPU contention
        return "try num_workers=" + std::to_string(n) + " (estimated " + with_thousands(rate) + " samples/s against the GPU's " +
               with_thousands(gpu) + "); confirm with pipeplan sweep --vary loader.num_workers=" + std::to_string(s.loader.num_workers) +
               "," + std::to_string(n) + "," + std::to_string(n + 2);
    }
    return "more workers cannot feed this GPU: at best about " + with_thousands(best_rate) + " samples/s (num_workers=" +
           std::to_string(best_n) + " on " + std::to_string(s.node.cpu_cores) +
           " cores) against " + with_thousands(gpu) + "; make __getitem__ cheaper (smaller decode, GPU decode) or add cores";
  }
  if (stage == "h2d_copy" && !s.loader.pin_memory) {
    Scenario t = s;
    t.loader.pin_memory = true;
    return "try pin_memory=True with non_blocking=True: the copy alone would allow about " +
           with_thousands(capacity_of("h2d_copy", t, p)) + " samples/s instead of " + with_thousands(capacity_of("h2d_copy", s, p));
  }
  if (stage == "h2d_copy")
    return s.transfer.copy_stream == CopyStream::kDefault || !s.transfer.non_blocking
               ? "try non_blocking=True with the copy on a side stream, so it overlaps the previous step's kernels"
               : "the copy itself is the limit: smaller batches in bytes (uint8 images, normalize on the GPU)";
  if (stage == "pin_thread")
    return "the single pin_memory thread is the limit: send smaller batches in bytes (uint8, normalize on the GPU), or try "
           "pin_memory=False and compare with pipeplan sweep --vary loader.pin_memory=true,false";
  if (stage == "main_receive")
    return "the main process receives every batch itself: smaller batches in bytes (uint8, normalize on the GPU) cost less to map";
  if (stage == "host_loop")
    // The launches, not the GPU, set the pace: only less Python per step helps. The per-step sync is priced
    // apart (diagnose: sync_note), against the simulated step.
    return "cut Python per step (CUDA graphs, torch.compile, fused optimizers): the loop's launches, not the GPU, "
           "set the pace";
  if (stage == "storage")
    return "storage is the limit: keep the dataset in the page cache or on faster local disk, or read fewer bytes per sample";
  if (stage == "metadata")
    return "the file opens are the limit: pack samples into larger files (tar shards for WebDataset, one array file; "
           "compare with pipeplan sweep --vary dataset.samples_per_file=" + std::to_string(s.dataset.samples_per_file) +
           ",1000), or copy the dataset to each node's local disk";
  if (stage == "comm" && s.fsdp.enabled())
    // what FSDP's own knobs trade: prefetch hides gathers behind compute, SHARD_GRAD_OP drops backward's gathers
    // for memory
    return s.fsdp.reshard_after_forward
               ? std::string(s.fsdp.backward_prefetch == FsdpBackwardPrefetch::kNone
                                 ? "prefetch backward's all-gathers (fsdp.backward_prefetch=backward_pre), or "
                                 : "") +
                     "keep forward's parameters for backward (fsdp.reshard_after_forward=false, SHARD_GRAD_OP: more "
                     "memory, a third fewer collectives) (pipeplan sweep --vary fsdp.reshard_after_forward=true,false), "
                     "or fewer, larger units (less latency a step)"
               : "FSDP's collectives outlast the units' compute: fewer, larger units (less latency a step), a larger "
                 "batch per GPU (more compute to hide them behind), or a faster interconnect";
  if (stage == "comm")
    return "try a different ddp.bucket_cap_mb (pipeplan sweep --vary ddp.bucket_cap_mb=5,25,100) or overlap more of the all-reduce";
  return "the GPU sets the pace: the input pipeline has headroom";
}

namespace {

// A coarser pad_to_multiple_of to compare with the job's: 64, or four times the job's where it is 64 or more.
std::int64_t coarser_multiple(std::int64_t current) { return current < 64 ? 64 : 4 * current; }

// sequence.warm_up_shapes' one-time host time on each rank: a plan build for every padded length at the batch's rows
// (and at the epoch's last, smaller batch's). 0 without the warm-up.
double warm_up_s(const Scenario& s) {
  if (!s.sequence.enabled || !s.sequence.warm_up_shapes) return 0.0;
  const double row_counts = s.last_batch_rows() > 0 ? 2.0 : 1.0;
  return static_cast<double>(padded_length_count(s.sequence)) * row_counts * s.sequence.new_shape_host_s;
}

// Each process keeps the plans it built for a batch shape (validation run 63, finding 6: every slow launch a shape
// not run before), so one step on each shape the job can meet, before training, moves the cost out of the run. Empty
// where the shapes are unbounded (a law without max_tokens), vary in rows too (batch_tokens) or number over
// kWarmUpLengthsWorthNaming (a warm-up of more is not advice worth a line).
constexpr std::int64_t kWarmUpLengthsWorthNaming = 10000;

std::string warm_up_advice(const SequenceConfig& seq, int batch_size) {
  const std::int64_t lengths = padded_length_count(seq);
  if (!warm_up_possible(seq) || lengths > kWarmUpLengthsWorthNaming) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "; or run one step on each of the %lld padded lengths (batches of %d) before training (about %.1f s "
                "once; the plan caches keep them: sequence.warm_up_shapes=true simulates it)",
                static_cast<long long>(lengths), batch_size, static_cast<double>(lengths) * seq.new_shape_host_s);
  return buf;
}

// Which attention backend pays for a new shape: on the validation H100 (torch 2.11.0+cu130), scaled_dot_product_
// attention's cuDNN backend, its default there, took 145-197 ms more host time for a length not run before than for
// one it had run, flash and memory-efficient attention 2-9 ms more (validation run 64, finding 1: shape_probe.py's
// host time new less seen, two batch sizes, cudnn.benchmark off and on). A cost this large is a
// plan build worth asking the backend about; a small one is not.
constexpr double kNewShapeCostWorthABackend_s = 0.05;

std::string attention_backend_advice(double new_shape_host_s) {
  if (new_shape_host_s < kNewShapeCostWorthABackend_s) return "";
  return "; if the model uses scaled_dot_product_attention, check its backend: cuDNN's builds a plan per shape "
         "(145-197 ms a new shape on an H100 with torch 2.11, flash or memory-efficient attention 2-9 ms: "
         "torch.nn.attention.sdpa_kernel picks one; measure with calibrate/validation/shape_probe.py)";
}

// A host-bound loop's sync costs it no more than the wait for the kernels launched last (the GPU is idle behind
// the launches anyway), so it is priced, not blamed: validation run 26 measured no gain from removing a host-bound
// ResNet-50 loop's per-step sync (the harness's pairs 7% slower without it; sync_check.py's alternating blocks
// within 2%, their drift 20-35 ms). Empty where no tail is measured: the sync then costs nothing in the model.
std::string sync_note(const SimResult& result, const Scenario& s) {
  const double wait_s = s.sync_tail_s_per_step();
  if (wait_s <= 0.0 || result.step_mean_s <= 0.0) return "";  // no sync, or no tail measured
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * wait_s / result.step_mean_s);
  return "; the per-step sync (.item(), print) only adds the wait for the kernels launched last (" + ms(wait_s) +
         " a step, " + share + " of the step): measure before removing it (pipeplan sweep "
         "--vary training.sync_every_steps=" + std::to_string(s.training.sync_every_steps) + ",0, then the real loop)";
}

// A rank waiting at a collective for a rank that waits for its data (or its copy, its host) waits for that: where one
// of those waits is 5% of the step or more, the straggler's own cause takes the ranks' wait too. Otherwise the ranks'
// wait is their steps' difference itself (a longer batch on one rank). Pure.
bool ranks_wait_is_a_stragglers(const GpuReport& g) {
  return g.idle_waiting_for_ranks_fraction > 0.0 &&
         std::max({g.idle_waiting_for_data_fraction, g.idle_waiting_for_copy_fraction, g.idle_host_fraction}) >= 0.05;
}

// Each rank pads its own batch to its longest sample, so the ranks' steps differ where the padded length varies: the
// simulated ranks of every simulated node, not only node 0's GPUs (one GPU a node still waits for the other nodes').
bool ranks_batches_differ_in_shape(const Scenario& s) {
  return s.simulated_ranks() > 1 && s.sequence.enabled && s.sequence.collate != SequenceCollate::kPadToMax &&
         s.sequence.collate != SequenceCollate::kPack;
}

// What the pin thread holds the GIL for, after "holds it N% of the time" in a host-bound explanation: the receive
// of each batch, and where the profile says so (ipc.release_holds_gil with a measured release) the free of the
// worker's shared copy after pin_memory(). Validation run 74 (release_gil_probe.py): that free unmaps the batch in
// its storage's Python object's dealloc, with the GIL held for 0.74-0.99 of it; a private tensor's free releases it.
std::string pin_gil_holds(const Scenario& s, const Profile& p) {
  const double release_s = pin_receive_parts(p, s.batch_bytes()).release_s;
  return release_s > 0.0 ? ": its receive of each batch, and " + ms(release_s) +
                               " a batch freeing the worker's shared copy after pin_memory()"
                         : ": its receive of each batch";
}

}  // namespace

Diagnosis diagnose(SimResult& result, const Scenario& s, const Profile& p) {
  Diagnosis d = name_bottleneck(result, s, p);
  d.suggestion = suggest(d.stage, s, p);
  const GpuReport& g = result.gpu;
  if (ranks_wait_is_a_stragglers(g) && g.idle_waiting_for_ranks_fraction >= 0.01 && d.stage != "gpu_compute")
    d.explanation += "; " + pct(g.idle_waiting_for_ranks_fraction) +
                     " of each step the GPUs wait at the collectives for a rank held up the same way";
  if (d.rank_imbalance)
    d.suggestion = ranks_batches_differ_in_shape(s)
                       ? "even the ranks' batches: packing (sequence.collate=pack) gives every rank the same shape, "
                         "length buckets (collate=bucket) narrow the spread (compare with pipeplan sweep --vary "
                         "sequence.collate=" + std::string(to_string(s.sequence.collate)) + ",bucket,pack)"
                       : "find what makes one rank's step longer than the others' (the step's own spread, a slower "
                         "GPU or host): the collectives wait for it";
  if (d.stage == "host_loop") d.suggestion += sync_note(result, s);
  // Validation run 11 measured in_order=False at +12.6% on a worker-bound image loader whose workers
  // idled behind slow batches (docs/validation.md); the simulator has the mechanism.
  if (d.main_thread_full)
    d.suggestion += "; or pin_memory=True, which moves the receive and the copy's staging to the pin thread "
                    "(confirm with pipeplan sweep --vary loader.pin_memory=false,true)";
  if (d.head_of_line)
    d.suggestion += "; or loader.in_order=False, which hands batches over as they finish (confirm with pipeplan sweep "
                    "--vary loader.in_order=true,false)";
  // A loop that never finds the GIL free shares it with the pin thread's receive (unpickling a batch) and its release
  // of the worker's batch after the copy.
  const double gil_busy = result.gil_busy_fraction();
  if (d.stage == "host_loop" && gil_busy >= 0.9 && result.gil_held_pin_fraction >= 0.1)
    d.suggestion += "; the GIL is busy " + pct(gil_busy) + " of the time (the pin thread's receive and release " +
                    pct(result.gil_held_pin_fraction) + "): fewer tensors a batch (one shared-memory handle each) "
                    "and fewer bytes (the pin thread unmaps them holding it) shorten it (compare pin_memory with "
                    "pipeplan sweep --vary loader.pin_memory=true,false)";
  // A loop that needs the memory map stalls while the pin thread touches and unmaps each batch: its bytes.
  if (d.stage == "host_loop" && result.memory_map_wait_main_fraction >= 0.1)
    d.suggestion += "; the loop stalls " + pct(result.memory_map_wait_main_fraction) +
                    " of the time while the pin thread touches and unmaps workers' batches: fewer bytes a batch "
                    "(uint8 images, normalize on the GPU) shorten that work";
  // A GPU that decodes the JPEGs too: that part of its step is input work a CPU worker could take instead.
  if (d.stage == "gpu_compute" && s.training.gpu_decode_s_per_sample > 0.0)
    d.suggestion += "; " + ms(s.gpu_decode_s()) + " of each step is JPEG decode on the GPU " +
                    "(training.gpu_decode_s_per_sample): decoding in the DataLoader's workers frees it where they have "
                    "cores to spare";
  // A step that keeps meeting batch shapes it has not run builds kernel plans for each (validation run 63):
  // fewer distinct padded lengths cut it; the cost also ends once every shape has been run. Only where the loop sets
  // the pace: a loop running ahead of a busy GPU builds them while queued steps run.
  if (d.stage == "host_loop" && result.new_shape_fraction >= kNewShapeFractionWorthNaming)
    d.suggestion += "; " + pct(result.new_shape_fraction) + " of the time goes to building kernel plans for batch "
                    "shapes not run before (" + ms(s.sequence.new_shape_host_s) + " each, " +
                    fixed2(result.new_shapes_per_step) + " a step): pad to a multiple of a length "
                    "(sequence.pad_to_multiple_of, DataCollatorWithPadding's pad_to_multiple_of: compare with pipeplan "
                    "sweep --vary sequence.pad_to_multiple_of=" + std::to_string(std::max<std::int64_t>(1, s.sequence.pad_to_multiple_of)) +
                    "," + std::to_string(coarser_multiple(s.sequence.pad_to_multiple_of)) +
                    "), or buckets (sequence.collate=bucket); a longer run meets fewer new shapes" +
                    attention_backend_advice(s.sequence.new_shape_host_s) +
                    warm_up_advice(s.sequence, s.loader.batch_size);
  // A GPU busy on padding: a sequence batch's padded positions cost as real ones (docs/model.md, Sequences).
  if (d.stage == "gpu_compute" && !d.rank_imbalance && s.sequence.enabled &&
      s.sequence.collate != SequenceCollate::kPack && result.padding_fraction() >= 0.2)
    d.suggestion += "; " + pct(result.padding_fraction()) +
                    " of the batches' token positions are padding: packing (sequence.collate=pack) or length buckets "
                    "(collate=bucket) give the GPU fewer (compare with pipeplan sweep --vary "
                    "sequence.collate=" + std::string(to_string(s.sequence.collate)) + ",pack)";
  return d;
}

namespace {

// What in_order=false does to a pin-bound loop whose batches overtake each other. At the pin thread's own
// capacity it only evens the steps (tests: BatchesOvertakingEachOtherSetAPinBoundP90). Below it, something
// else holds the loop back: a slow worker that in order must deliver every num_workers-th batch, which
// in_order=false passes over while its slots are full (PyTorch's _try_put_index), so the throughput can rise
// toward the pin thread's (validation run 71: measured +5.9% / +9.5% a pair, mean of 8 pairs each).
// Within this share of the pin thread's capacity the loop runs at it (seed-to-seed spread is about 2%).
constexpr double kAtPinCapacityShare = 0.97;

std::string in_order_effect_note(double samples_per_s, double pin_capacity_samples_per_s) {
  const bool at_capacity =
      pin_capacity_samples_per_s <= 0.0 || samples_per_s >= kAtPinCapacityShare * pin_capacity_samples_per_s;
  if (at_capacity) return " (loader.in_order=false evens the steps, at the same throughput)";
  return " (loader.in_order=false evens the steps and may lift the throughput toward the pin thread's " +
         with_thousands(pin_capacity_samples_per_s) + " samples/s, as the loop now runs at " +
         pct(samples_per_s / pin_capacity_samples_per_s) +
         " of it: confirm with pipeplan sweep --vary loader.in_order=true,false)";
}

}  // namespace

Diagnosis name_bottleneck(SimResult& result, const Scenario& s, const Profile& p) {
  for (const auto& c : stage_capacities(s, p))
    for (auto& stage : result.stages)
      if (stage.name == c.stage) stage.capacity_samples_per_s = std::isfinite(c.samples_per_s) ? c.samples_per_s : -1.0;

  const GpuReport& g = result.gpu;
  const double gpu_capacity = find(result, "gpu_compute")->capacity_samples_per_s;
  Diagnosis d;
  // Which wait dominates the GPU's idle time decides the side of the chain to blame.
  // fraction decides the side; shown is the wait the explanation names (a straggler's cause takes the ranks' wait
  // in fraction only)
  struct Cause {
    const char* name;
    double fraction, shown;
  };
  Cause causes[] = {{"data", g.idle_waiting_for_data_fraction, g.idle_waiting_for_data_fraction},
                    {"copy", g.idle_waiting_for_copy_fraction, g.idle_waiting_for_copy_fraction},
                    {"host", g.idle_host_fraction, g.idle_host_fraction},
                    {"comm", g.exposed_comm_fraction, g.exposed_comm_fraction},
                    {"ranks", g.idle_waiting_for_ranks_fraction, g.idle_waiting_for_ranks_fraction}};
  auto larger = [](const Cause& a, const Cause& b) { return a.fraction < b.fraction; };
  if (ranks_wait_is_a_stragglers(g)) {
    Cause* own = std::max_element(std::begin(causes), std::begin(causes) + 3, larger);
    own->fraction += g.idle_waiting_for_ranks_fraction;
    causes[4].fraction = 0.0;
  }
  const Cause* top = std::max_element(std::begin(causes), std::end(causes), larger);
  const double idle = 1.0 - g.busy_fraction;
  if (g.busy_fraction >= 0.9 || top->fraction < 0.05) {
    d.stage = "gpu_compute";
    double input_capacity = -1.0;
    for (const auto& st : result.stages)
      if (is_input_stage(st.name) && st.capacity_samples_per_s > 0)
        input_capacity = input_capacity < 0 ? st.capacity_samples_per_s : std::min(input_capacity, st.capacity_samples_per_s);
    d.explanation = "compute-bound: the GPU is busy " + pct(g.busy_fraction) + " of each step at " +
                    with_thousands(result.samples_per_s) + " samples/s (its synthetic-data rate is " +
                    with_thousands(result.baseline_samples_per_s) + ")";
    if (input_capacity > 0) d.explanation += "; the input pipeline could deliver about " + with_thousands(input_capacity) + " samples/s";
    return d;
  }
  if (std::string(top->name) == "ranks") {
    // nothing holds the ranks up but their own steps: the slowest rank's step sets every step
    d.stage = "gpu_compute";
    d.rank_imbalance = true;
    d.explanation = "rank-imbalanced: every collective waits for the slowest rank, and each GPU waits " +
                    pct(top->shown) + " of each step for another rank's step to end" +
                    (ranks_batches_differ_in_shape(s)
                         ? " (each rank pads its own batch to its longest sample: the rank with the longest batch "
                           "sets the step)"
                         : " (the ranks' steps differ: training.step_cv, a slower rank)");
    return d;
  }
  const std::string waits = "; the GPU waits " + pct(top->shown) + " of each step";
  // With pin_memory=False the loop's own thread receives each batch, stages its pageable copy (blocking) and
  // runs the step's Python: together they can fill the thread while no one stage does, and the GPU's idle time
  // then splits between "data" (the receive) and "copy". Validation runs 11-17: all 31 unpinned cases with
  // workers measured host-bound (the loop's thread the limit), ten of them named worker-bound before this rule.
  if (!s.loader.pin_memory && s.loader.num_workers > 0) {
    const StageReport* recv = find(result, "main_receive");
    const StageReport* host = find(result, "host_loop");
    const StageReport* copy = find(result, "h2d_copy");
    const double recv_busy = recv ? recv->busy_fraction : 0.0, host_busy = host ? host->busy_fraction : 0.0,
                 copy_busy = copy ? copy->busy_fraction : 0.0;
    // Its own work need not fill it: with a sync the thread also waits for the GPU it launched, and the loader
    // limits it only while it waits in next() with no batch ready (validation run 19: B1's unpinned tensor cases,
    // the thread 72% busy and 31% at the sync, measured host-bound, were named worker-bound). Not starved, it is
    // named when its work covers the GPU's idle time (an exposed all-reduce, which the loop waits for at the sync
    // with little work of its own, keeps its name).
    const bool starved = result.main_wait_for_batch_fraction >= 1.0 - kMainThreadFullFraction;
    const double thread_busy = recv_busy + host_busy + copy_busy;
    if (thread_busy >= kMainThreadFullFraction || (!starved && thread_busy >= idle)) {
      d.main_thread_full = true;
      d.stage = host_busy >= recv_busy && host_busy >= copy_busy ? "host_loop"
                : recv_busy >= copy_busy                         ? "main_receive"
                                                                 : "h2d_copy";
      d.explanation = "main-thread-bound: with pin_memory=False the training loop's thread receives and releases each batch (" +
                      pct(recv_busy) + " of the time), stages its pageable copy (" + pct(copy_busy) +
                      ") and runs the step's Python (" + pct(host_busy) + "): busy " +
                      pct(std::min(1.0, thread_busy)) + " in all" +
                      (starved ? "" : ", waiting for a worker's batch " + pct(result.main_wait_for_batch_fraction) +
                                          " of the time") +
                      waits + " (" + pct(idle) + " idle in all)";
      return d;
    }
  }
  if (std::string(top->name) == "data") {
    const StageReport* worst = nullptr;
    for (const auto& st : result.stages) {
      if (!is_input_stage(st.name)) continue;
      if (!worst || st.busy_fraction > worst->busy_fraction + 1e-9 ||
          (std::fabs(st.busy_fraction - worst->busy_fraction) <= 1e-9 && st.capacity_samples_per_s < worst->capacity_samples_per_s))
        worst = &st;
    }
    d.stage = worst ? worst->name : "workers";
    const std::string cap = worst ? with_thousands(worst->capacity_samples_per_s) : "?";
    if (d.stage == "workers")
      d.explanation = "input-bound: " + std::to_string(s.loader.num_workers * s.node.gpus) + " workers load and decode about " + cap +
                      " samples/s against the GPU's " + with_thousands(gpu_capacity) + waits + " for data";
    else if (d.stage == "storage")
      d.explanation = "storage-bound: the device delivers about " + cap + " samples/s against the GPU's " + with_thousands(gpu_capacity) + waits + " for data";
    else if (d.stage == "metadata")
      d.explanation = "metadata-bound: the store's metadata server opens files for about " + cap +
                      " samples/s (" + with_thousands(s.storage.metadata_ops_per_s) + " opens/s" +
                      (s.storage.nodes_sharing > 1
                           ? ", this node's share of the " +
                                 with_thousands(s.storage.metadata_ops_per_s * s.storage.nodes_sharing) + " it serves " +
                                 std::to_string(s.storage.nodes_sharing) + " nodes"
                           : std::string()) +
                      ", " + std::to_string(s.dataset.samples_per_file) + " sample" +
                      (s.dataset.samples_per_file > 1 ? "s" : "") + " a file) against the GPU's " +
                      with_thousands(gpu_capacity) + waits + " for data";
    else if (d.stage == "pin_thread")
      d.explanation = "pin-bound: the single pin_memory thread receives and pins about " + cap + " samples/s against the GPU's " +
                      with_thousands(gpu_capacity) + waits + " for data";
    else if (d.stage == "main_receive")
      d.explanation = "receive-bound: the main thread maps workers' batches at about " + cap + " samples/s against the GPU's " +
                      with_thousands(gpu_capacity) + waits + " for data";
    else
      d.explanation = "input-bound: with num_workers=0 the training loop loads every batch itself, about " + cap +
                      " samples/s against the GPU's " + with_thousands(gpu_capacity) + waits + " for data";
    // Main-side bound with batches overtaking each other: the loop, taking batches in index order,
    // waits for a late one while the pin thread serves those that arrived before it, then takes them
    // at once: long steps and short ones. Above about 1 pair in 10 that pattern sets the p90 step
    // (validation run 10: pinned tensor cases, 12-23% of pairs, p90 1.8-2.0x the mean);
    // in_order=False hands batches over as they come.
    const bool main_side = d.stage == "pin_thread" || d.stage == "main_receive";
    if (main_side && s.loader.in_order && result.out_of_order_fraction >= 0.10 &&
        result.step_p90_s >= 1.5 * result.step_mean_s)
      d.explanation += "; " + pct(result.out_of_order_fraction) +
                       " of batches finish before the batch ahead of them, so the loop waits for a late one and then "
                       "takes the ones pinned meanwhile at once: p90 step " + ms(result.step_p90_s) + " against a mean of " +
                       ms(result.step_mean_s) + in_order_effect_note(result.samples_per_s, worst->capacity_samples_per_s);
    const bool wandering = s.loader.in_order && p.cpu.core_speed_cv > 0.0;
    // a worker waiting on its opens or reads is not idle: only the time it neither works nor waits on storage is
    // the head of the line's
    const double occupied = worst->busy_fraction + result.worker_storage_wait_fraction;
    if (d.stage == "workers" && result.worker_storage_wait_fraction >= 0.05)
      d.explanation += "; each worker waits on storage " + pct(result.worker_storage_wait_fraction) +
                       " of the time (its files' opens and cold reads, holding no core): more workers overlap those waits";
    if (d.stage == "workers" && (occupied < 0.8 || (wandering && occupied < 0.95))) {
      d.head_of_line = s.loader.in_order;
      d.explanation += "; yet the workers are busy only " + pct(worst->busy_fraction) +
                       ": batches return in order, so a slow batch blocks the ones behind it and the other workers idle "
                       "with their prefetch slots full (head-of-line blocking)";
      if (wandering)
        d.explanation += "; the slow batches come from cores whose speed wanders (profile cpu.core_speed_cv): "
                         "loader.in_order=false or more workers recovers it";
    }
    return d;
  }
  if (std::string(top->name) == "copy") {
    d.stage = "h2d_copy";
    d.explanation = std::string("copy-bound: the host-to-device copy from ") + (s.loader.pin_memory ? "pinned" : "pageable") +
                    " memory takes " + ms(find(result, "h2d_copy")->busy_fraction / std::max(result.steps_per_s, 1e-12)) +
                    " per step and the kernels wait for it" + waits;
    return d;
  }
  if (std::string(top->name) == "comm") {
    d.stage = "comm";
    d.explanation = s.fsdp.enabled()
                        ? "communication-bound: FSDP's all-gathers and reduce-scatters are not hidden behind the "
                          "units' compute" + waits
                        : "communication-bound: the gradient all-reduce is exposed after backward" + waits;
    return d;
  }
  d.stage = s.loop_thread_s() > 0.0 || result.new_shape_fraction > 0.0 ? "host_loop" : "h2d_copy";
  if (d.stage == "host_loop")
    d.explanation = "host-bound: the training loop's Python takes " + ms(s.training.host_s_per_step) + " per step" +
                    (result.new_shape_fraction > 0.0
                         ? " plus " + ms(s.sequence.new_shape_host_s) + " for each batch shape not run before (" +
                               fixed2(result.new_shapes_per_step) + " a step, " + pct(result.new_shape_fraction) +
                               " of the time)"
                         : "") +
                    (s.loop_batch_s() > 0.0
                         ? " plus " + ms(s.loop_batch_s()) +
                               " in the loader's next() and the batch's .to() call"
                         : "") +
                    (s.ddp_host_s() > 0.0 ? " and DDP's reducer " + ms(s.ddp_host_s()) : "") +
                    (s.loader.pin_memory && s.loader.num_workers > 0
                         ? " and shares the GIL with the pin thread (which holds it " + pct(result.gil_held_pin_fraction) +
                               " of the time" + pin_gil_holds(s, p) + ")" +
                               (s.training.host_needs_memory_map
                                    ? ", stalling " + pct(result.memory_map_wait_main_fraction) +
                                          " of the time while it touches and unmaps the workers' batches"
                                    : "")
                         : "") +
                    (s.training.sync_every_steps > 0
                         ? ", and a sync every " + std::to_string(s.training.sync_every_steps) +
                               " step(s) stops it running ahead" +
                               (s.training.launch_tail_s > 0.0
                                    ? " (each waits " + ms(s.training.launch_tail_s) + " for the kernels launched last)"
                                    : "")
                         : "") +
                    waits + " for launches";
  else
    d.explanation = "host-bound: the training loop blocks on " + std::string(s.loader.pin_memory ? "blocking copies" : "pageable copies") +
                    " and syncs" + waits + " (" + pct(idle) + " idle in all)";
  return d;
}

namespace {

// A job whose collectives span ranks the simulator does not run: each step waits for the slowest of the simulated
// ranks only (docs/model.md, Several nodes: 4 ranks of 10 ms steps at cv 0.2 wait 12.1 ms, one 10.0).
std::optional<std::string> unsimulated_ranks_note(const Scenario& s) {
  if (!(s.all_reduces_gradients() || s.shards_parameters()) || s.simulated_ranks() >= s.world_size()) return std::nullopt;
  const int most_nodes = std::min(s.cluster.nodes, kMaxSimulatedNodes);
  std::string out = "each step waits at the collectives for the slowest of the " + std::to_string(s.simulated_ranks()) +
                    " simulated ranks, not of the job's " + std::to_string(s.world_size()) +
                    ": a slow rank on another node is not drawn, so the wait for other ranks is understated";
  if (s.cluster.simulated_nodes < most_nodes)
    out += " (cluster.simulated_nodes=" + std::to_string(most_nodes) + " draws " +
           std::to_string(most_nodes * s.node.gpus) + " ranks; wall time in proportion)";
  return out;
}

// What the prediction rests on that the user should know, apart from the diagnosis: the report's "note:" lines.
std::vector<std::string> notes(const Scenario& s, const Profile& p) {
  std::vector<std::string> out;
  if (auto note = collective_scale_note(s, p)) out.push_back(std::move(*note));
  if (auto note = unsimulated_ranks_note(s)) out.push_back(std::move(*note));
  return out;
}

}  // namespace

nlohmann::json to_json(const SimResult& r, const Diagnosis& d, const Scenario& s, const Profile& p) {
  using nlohmann::json;
  json stages = json::array();
  for (const auto& st : r.stages) {
    json j = {{"name", st.name}, {"description", st.description}, {"busy_fraction", st.busy_fraction}};
    j["capacity_samples_per_s"] = st.capacity_samples_per_s < 0 ? json(nullptr) : json(st.capacity_samples_per_s);
    stages.push_back(j);
  }
  double bound = -1;
  std::string bound_stage;
  for (const auto& st : r.stages)
    if (st.capacity_samples_per_s > 0 && (bound < 0 || st.capacity_samples_per_s < bound)) {
      bound = st.capacity_samples_per_s;
      bound_stage = st.name;
    }
  json out = {
      {"scenario", s.name},
      {"profile", p.file},
      {"profile_fallbacks", p.fallbacks},
      {"seed", s.seed},
      {"steps", r.steps},
      {"warmup_steps", r.warmup_steps},
      {"simulated_s", r.simulated_end_s},
      // samples_per_s is the node's (the simulated one); a job across cluster.nodes runs each node alike
      {"throughput", {{"samples_per_s", r.samples_per_s}, {"steps_per_s", r.steps_per_s},
                      {"job_samples_per_s", r.samples_per_s * s.cluster.nodes}, {"nodes", s.cluster.nodes},
                      {"node_gpus", s.node.gpus}}},
      {"step_time_s",
       {{"mean", r.step_mean_s}, {"p50", r.step_p50_s}, {"p80", r.step_p80_s}, {"p90", r.step_p90_s}, {"p95", r.step_p95_s},
        {"p99", r.step_p99_s}}},
      {"long_step_fraction", r.long_step_fraction},
      {"step_p90_on_edge", r.step_p90_on_edge},
      {"bottleneck", {{"stage", d.stage}, {"explanation", d.explanation}, {"suggestion", d.suggestion}}},
      {"stages", stages},
      {"gpu",
       {{"busy_fraction", r.gpu.busy_fraction},
        {"idle_waiting_for_data_fraction", r.gpu.idle_waiting_for_data_fraction},
        {"idle_waiting_for_copy_fraction", r.gpu.idle_waiting_for_copy_fraction},
        {"idle_host_fraction", r.gpu.idle_host_fraction},
        {"exposed_comm_fraction", r.gpu.exposed_comm_fraction},
        {"idle_waiting_for_ranks_fraction", r.gpu.idle_waiting_for_ranks_fraction}}},
      {"synthetic_baseline",
       {{"samples_per_s", r.baseline_samples_per_s},
        {"step_time_s", r.baseline_step_mean_s},
        {"ratio", r.baseline_samples_per_s > 0 ? r.samples_per_s / r.baseline_samples_per_s : 0.0}}},
      {"analytic_bound", {{"samples_per_s", bound < 0 ? json(nullptr) : json(bound)}, {"stage", bound_stage}}},
      {"loader",
       {{"mean_batches_in_flight", r.mean_batches_in_flight},
        {"mean_batch_latency_s", r.mean_batch_latency_s},
        {"batches_per_s", r.batches_delivered_per_s},
        {"out_of_order_fraction", r.out_of_order_fraction},
        {"main_wait_for_batch_fraction", r.main_wait_for_batch_fraction},
        {"epochs_started", r.epochs_started}}},
      {"gil",
       {{"busy_fraction", r.gil_busy_fraction()},
        {"main_thread_held_fraction", r.gil_held_main_fraction},
        {"pin_thread_held_fraction", r.gil_held_pin_fraction},
        {"main_thread_wait_fraction", r.gil_wait_main_fraction},
        {"pin_thread_wait_fraction", r.gil_wait_pin_fraction}}},
      {"cpu", {{"mean_busy_cores", r.mean_busy_cores}, {"cores", s.node.cpu_cores}}},
      {"storage",
       {{"readers_in_flight_mean", r.storage_readers_in_flight_mean},
        {"wait_s_per_file_mean", r.storage_wait_s_per_file},
        {"getitem_in_flight_mean", r.storage_getitem_in_flight_mean},
        {"workers_waiting_fraction", r.worker_storage_wait_fraction}}},
      {"memory_map",
       {{"pin_thread_held_fraction", r.memory_map_held_pin_fraction},
        {"main_thread_wait_fraction", r.memory_map_wait_main_fraction}}},
  };
  out["notes"] = notes(s, p);
  if (!s.loader.replay_batch_s.empty()) out["loader"]["replay_wrapped_batches"] = r.replay_wrapped_batches;
  if (s.sequence.enabled) {
    // tokens are what a language model's job counts; padding is the GPU time spent on nothing
    out["sequence"] = {{"collate", to_string(s.sequence.collate)},
                       {"tokens_per_s", r.tokens_per_s},
                       {"token_slots_per_s", r.token_slots_per_s},
                       {"padding_fraction", r.padding_fraction()},
                       {"mean_samples_per_batch", s.sequence_mean.samples},
                       {"mean_tokens_per_batch", s.sequence_mean.tokens},
                       {"mean_token_slots_per_batch", s.sequence_mean.slots},
                       {"mean_batch_bytes", s.sequence_mean.bytes},
                       {"mean_gpu_step_s", s.training.step_s() * s.mean_step_factor()},
                       {"pad_to_multiple_of", s.sequence.pad_to_multiple_of},
                       {"new_shape_host_s", s.sequence.new_shape_host_s},
                       {"new_shapes_per_step", r.new_shapes_per_step},
                       {"new_shape_fraction", r.new_shape_fraction},
                       {"warm_up_shapes", s.sequence.warm_up_shapes},
                       {"warm_up_s", warm_up_s(s)}};
  }
  return out;
}

std::string to_text(const SimResult& r, const Diagnosis& d, const Scenario& s, const Profile& p) {
  std::ostringstream o;
  char line[256];
  o << "pipeplan simulate: " << s.name << " (";
  if (s.cluster.nodes > 1)
    o << s.cluster.nodes << " nodes of " << s.node.gpus << " GPU" << (s.node.gpus > 1 ? "s" : "") << ", "
      << s.cluster.simulated_nodes << " simulated, " << s.node.cpu_cores << " cores a node";
  else
    o << s.node.gpus << " GPU" << (s.node.gpus > 1 ? "s" : "") << ", " << s.node.cpu_cores << " cores";
  o << "; profile " << p.file << ")\n";
  if (!p.fallbacks.empty()) {
    o << "  profile sections taken from the default profile:";
    for (const auto& f : p.fallbacks) o << ' ' << f;
    o << '\n';
  }
  std::snprintf(line, sizeof line, "  %lld steps simulated (first %lld left out), %.2f s of training time\n",
                static_cast<long long>(r.steps), static_cast<long long>(r.warmup_steps), r.simulated_end_s);
  o << line << '\n';
  o << "  throughput      " << with_thousands(r.samples_per_s) << " samples/s";
  std::snprintf(line, sizeof line, " (%.2f steps/s)", r.steps_per_s);
  o << line;
  if (s.cluster.nodes > 1)
    o << " a node; " << with_thousands(r.samples_per_s * s.cluster.nodes) << " samples/s over the " << s.cluster.nodes
      << " nodes (" << (s.cluster.simulated_nodes == 1 ? "each run as this one"
                                                        : "the collectives waited for " +
                                                              std::to_string(s.cluster.simulated_nodes) +
                                                              " simulated nodes' ranks")
      << ")";
  o << '\n';
  if (s.sequence.enabled) {
    std::snprintf(line, sizeof line, "  tokens          %s tokens/s; %.0f%% of the batches' token positions are padding (%s)\n",
                  with_thousands(r.tokens_per_s).c_str(), 100 * r.padding_fraction(), to_string(s.sequence.collate));
    o << line;
    if (s.sequence.new_shape_host_s > 0.0) {
      std::snprintf(line, sizeof line, "  new shapes      %.2f a step, %s each: %.0f%% of the time building kernel plans%s\n",
                    r.new_shapes_per_step, ms(s.sequence.new_shape_host_s).c_str(), 100 * r.new_shape_fraction,
                    s.sequence.warm_up_shapes ? " (after the warm-up below)" : "");
      o << line;
      if (s.sequence.warm_up_shapes) {
        std::snprintf(line, sizeof line, "  warm-up         %.1f s once, before the job: one step on each batch shape\n",
                      warm_up_s(s));
        o << line;
      }
    }
  }
  std::snprintf(line, sizeof line, "  step time       mean %s  p50 %s  p90 %s\n", ms(r.step_mean_s).c_str(), ms(r.step_p50_s).c_str(),
                ms(r.step_p90_s).c_str());
  o << line;
  if (r.step_p90_on_edge) {
    // the step time rises steeply around the p90: it is whichever kind of step the slow steps' share lands on
    o << "                  the p90 is on an edge: the step time rises 1.3x or more from the p85 to the p95 ("
      << pct(r.long_step_fraction) << " of steps\n"
      << "                  over 1.5x the median); a small change in how many steps wait moves it between "
      << ms(r.step_p80_s) << " (p80)\n"
      << "                  and " << ms(r.step_p95_s) << " (p95)\n";
  }
  std::snprintf(line, sizeof line, "  synthetic data  %s samples/s: this job runs at %.0f%% of it\n",
                with_thousands(r.baseline_samples_per_s).c_str(),
                r.baseline_samples_per_s > 0 ? 100.0 * r.samples_per_s / r.baseline_samples_per_s : 0.0);
  o << line << '\n';
  o << "  bottleneck: " << d.stage << "\n    " << d.explanation << "\n    suggestion: " << d.suggestion << "\n\n";
  o << "  stage             busy   capacity (samples/s)\n";
  for (const auto& st : r.stages) {
    std::snprintf(line, sizeof line, "  %-16s %5.0f%%   %s\n", st.name.c_str(), 100 * st.busy_fraction,
                  st.capacity_samples_per_s < 0 ? "-" : with_thousands(st.capacity_samples_per_s).c_str());
    o << line;
  }
  std::snprintf(line, sizeof line,
                "\n  GPU: busy %.0f%%; idle waiting for data %.0f%%, for copies %.0f%%, for the host %.0f%%",
                100 * r.gpu.busy_fraction, 100 * r.gpu.idle_waiting_for_data_fraction, 100 * r.gpu.idle_waiting_for_copy_fraction,
                100 * r.gpu.idle_host_fraction);
  o << line;
  // several ranks: the wait at a collective for another rank apart from the collective's own exposed time
  if (s.world_size() > 1) {
    std::snprintf(line, sizeof line, ", for other ranks %.0f%%", 100 * r.gpu.idle_waiting_for_ranks_fraction);
    o << line;
  }
  std::snprintf(line, sizeof line, "; exposed comm %.0f%%\n", 100 * r.gpu.exposed_comm_fraction);
  o << line;
  std::snprintf(line, sizeof line, "  DataLoader: %.1f batches in flight on average, %s from index to hand-off",
                r.mean_batches_in_flight, ms(r.mean_batch_latency_s).c_str());
  o << line;
  if (s.loader.num_workers > 0) {
    // The loop starved: in next() with no batch ready (a worker's, or the pin thread's).
    std::snprintf(line, sizeof line, "; the loop waited for a batch %.0f%% of the time", 100 * r.main_wait_for_batch_fraction);
    o << line;
  }
  if (s.loader.num_workers > 1) {
    // With in_order=True a batch finished before its predecessor waits for it (long steps, then short ones).
    std::snprintf(line, sizeof line, "; %.0f%% finished before the batch ahead of them%s", 100 * r.out_of_order_fraction,
                  s.loader.in_order ? "" : " (in_order=False: handed over as they come)");
    o << line;
  }
  o << "\n";
  if (r.storage_wait_s_per_file > 0.0) {
    // Cold reads: what a file waited and how many read beside it, the figures a job's own getitem timestamps and
    // calibrate's storage experiments give (validation runs 50-52)
    std::snprintf(line, sizeof line,
                  "  storage: a cold file waited %s on average (request latency and device time); %.1f reads in "
                  "flight during a read",
                  ms(r.storage_wait_s_per_file).c_str(), r.storage_readers_in_flight_mean);
    o << line;
    if (r.storage_getitem_in_flight_mean > 0.0) {
      std::snprintf(line, sizeof line, "; %.1f workers in __getitem__ during one", r.storage_getitem_in_flight_mean);
      o << line;
    }
    o << "\n";
  }
  if (s.loader.pin_memory && s.loader.num_workers > 0) {
    // One interpreter lock for the loop's Python and the pin thread's receive (unpickling a batch) and release.
    std::snprintf(line, sizeof line,
                  "  GIL: held %.0f%% of the time (the training loop's Python %.0f%%, the pin thread's receive and release "
                  "%.0f%%); waiting for it: the loop %.0f%%, the pin thread %.0f%%\n",
                  100 * r.gil_busy_fraction(), 100 * r.gil_held_main_fraction,
                  100 * r.gil_held_pin_fraction, 100 * r.gil_wait_main_fraction, 100 * r.gil_wait_pin_fraction);
    o << line;
    // The pin thread's touch and unmap of each worker's batch hold the memory map the loop keeps needing.
    if (s.training.host_needs_memory_map) {
      std::snprintf(line, sizeof line,
                    "  memory map: the pin thread maps, touches and unmaps batches %.0f%% of the time; the loop "
                    "stalls on it %.0f%%\n",
                    100 * r.memory_map_held_pin_fraction, 100 * r.memory_map_wait_main_fraction);
      o << line;
    }
  }
  for (const std::string& note : notes(s, p)) o << "  note: " << note << "\n";
  return o.str();
}

}  // namespace pipeplan::sim
