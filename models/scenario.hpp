// Scenario: one training job's input pipeline, as read from a `pipeplan-scenario/1` file.
// Every key is documented in docs/scenario.md (meaning, unit, default, range); keep the two
// in step. Values here are fully resolved: defaults applied, cross-field rules checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/cost_models.hpp"
#include "models/distribution.hpp"
#include "models/fsdp.hpp"
#include "models/profile.hpp"
#include "models/sequence.hpp"

namespace pipeplan {

// The longest simulation a scenario or --steps may ask for (memory grows with steps).
constexpr std::int64_t kMaxSteps = 2'000'000;
// DDP buckets per step the simulator accepts (each is a simulated all-reduce).
constexpr int kMaxBucketsPerStep = 4096;
// FSDP units a scenario may have (each is two or three simulated collectives per step).
constexpr int kMaxFsdpUnits = 4096;
// Simulated work the CLI accepts in one run (about two minutes at ~400k activities per second).
constexpr double kMaxSimulatedActivities = 5.0e7;

// Rough count of the activities a run will simulate, to refuse runs that would take hours.
double estimated_activities(const struct Scenario& s, std::int64_t steps);

struct NodeConfig {
  int gpus = 1;
  int cpu_cores = 0;  // resolved from the profile when absent
};

// The most nodes `cluster.simulated_nodes` runs at once (each a node's actors: wall time grows in proportion).
inline constexpr int kMaxSimulatedNodes = 64;

// A job across several nodes (torchrun --nnodes), each running this scenario's node: the collectives span every node's
// ranks over the network. The simulator runs one node; the others are taken to run as it does.
struct ClusterConfig {
  int nodes = 1;
  // the network's collective figures where the scenario gives them (else the profile's nccl.inter_node): nccl-tests'
  // busbw of a run across nodes, and its latency (< 0: not given)
  double inter_node_bus_bytes_per_s = 0.0;
  double inter_node_latency_s = -1.0;
  // nodes the simulator runs (node 0 reported, the others drawn apart and waited for at the collectives): 1 takes the
  // other nodes to run as node 0 does
  int simulated_nodes = 1;
};

struct DatasetConfig {
  std::int64_t num_samples = 1281167;
  Distribution sample_bytes{110000.0, 0.0, Distribution::Kind::kLognormal};
  double item_bytes = 602112.0;
  Distribution load_s_per_sample{0.004, 0.0, Distribution::Kind::kLognormal};
  // Samples a file holds: 1 for a file per sample (torchvision's ImageFolder), thousands for tar shards (WebDataset)
  // or one array file. Each file opened is one metadata operation on the store (storage.open_latency_s,
  // storage.metadata_ops_per_s); a sample costs 1 / samples_per_file of an open on average.
  std::int64_t samples_per_file = 1;
  // This dataset's own per-core speed as workers are added (memory-bound loads slow more than the
  // machine's decode curve says); empty: the profile's cpu.speed_vs_busy_cores.
  std::vector<SpeedPoint> load_speed_vs_busy_cores;  // sorted by busy cores
};

// How a DataLoader worker orders a batch's page-cache misses against their CPU. PyTorch's map-style fetch reads each
// sample inside its own __getitem__ (`[dataset[i] for i in indices]`), so a worker's reads alternate with their
// decode: kPerSample, the default since validation run 48 (finding 6: the cold tensor cases' bias +7.3% -> +1.8%).
// kPerBatch reads the batch's files back to back, then runs their CPU (a dataset that reads a shard or a whole
// batch at once, e.g. __getitems__ or an iterable dataset; the model until then).
enum class WorkerReads { kPerBatch, kPerSample };

// How a cold read's device rate follows the other readers. kAtStart (the model until the forty-sixth session): a
// read's rate is fixed by the count of readers at its start and never changes, so the first of several readers that
// start together reads at the one-reader rate while the last gets the four-reader one, and a read is not slowed by
// readers that start after it. kFollowsReaders: every read in flight gets the per-reader rate of the count reading
// at each moment (the storage host's capacity is n x stream rate(n), capped by the device's bandwidth; SimGrid's
// non-linear sharing). Calibrate's pause sweep (forty-sixth session) found four readers with 0-2 ms of work a file
// waiting the four-reader time a file whatever the pause, as readers that move in step would.
enum class DeviceShare { kAtStart, kFollowsReaders };
// Which of calibrate's concurrent cold reads gives each reader's rate by reader count: readers reading back to back
// (storage.buffered_read.concurrent) or readers working on the CPU after each file (concurrent_with_work).
enum class ReaderShareFrom { kBackToBack, kWithWork };
// Where the device's bandwidth (storage.read_bytes_per_s, when the scenario does not set it) comes from: fio's best
// 1 MiB sequential read alone, or the larger of it and calibrate's concurrent buffered readers' peak.
enum class DeviceBandwidthFrom { kFio, kFioOrBufferedPeak };

struct StorageConfig {
  double page_cache_hit_ratio = 1.0;
  WorkerReads worker_reads = WorkerReads::kPerSample;
  DeviceShare device_share = DeviceShare::kAtStart;
  ReaderShareFrom reader_share_from = ReaderShareFrom::kBackToBack;
  DeviceBandwidthFrom device_bandwidth_from = DeviceBandwidthFrom::kFio;
  // worker_reads=per_sample: at most this many read-then-CPU pieces a batch; beyond it, runs of consecutive samples
  // share one read and one CPU piece. 4 since the forty-sixth session: the fewest tried (4, 8, 16) that simulates
  // 10,000 cold steps of the default scenario under the 1 s target (0.78 s; 64, one piece a sample for the table's
  // batches, took 5.0 s), and over the table's 54 cold cases as close as 64 (docs/scenario.md).
  int read_pieces_per_batch = 4;
  double read_bytes_per_s = 0.0;  // resolved from the profile when absent; this node's share (nodes_sharing)
  double read_iops = 0.0;
  // Nodes reading the same store at once (a shared file system under a multi-node job): each gets an equal share of
  // its bandwidth and IOPS (read_bytes_per_s and read_iops, as given or from the profile, are the store's).
  int nodes_sharing = 1;
  double read_latency_s = 0.0;
  // A file's open on a network file system, cached data or not: the worker waits one metadata round trip
  // (open_latency_s: NFS's close-to-open GETATTR, a Lustre MDS open RPC), and the store's metadata server serves at
  // most metadata_ops_per_s opens a second, shared by every reader of every node (0: no limit; this node's share, as
  // read_iops). Neither holds a core. 0 by default: on a local file system the open is part of load_s_per_sample.
  double open_latency_s = 0.0;
  double metadata_ops_per_s = 0.0;
  bool opens_cost() const { return open_latency_s > 0.0 || metadata_ops_per_s > 0.0; }
  double stream_read_bytes_per_s = 0.0;       // one reading worker's own device rate cap; 0: none
  double buffered_read_cpu_s_per_byte = 0.0;  // worker CPU per byte read from the device
  std::vector<ReaderSharePoint> stream_read_vs_readers;  // from the profile (docs/profile.md); empty: none
};

struct LoaderConfig {
  int batch_size = 1;
  int num_workers = 0;
  int prefetch_factor = 2;  // meaningful only when num_workers > 0
  bool pin_memory = false;
  bool persistent_workers = false;
  bool drop_last = false;
  bool in_order = true;
  double worker_start_s = 0.15;
  std::optional<double> collate_s_per_batch;  // absent: batch bytes / host memcpy rate
  // collate_s_per_batch was timed inside a DataLoader worker, writing into fresh shared memory (pipeplan_probe,
  // the validation probes): the shared segment's first-write cost is in it, so the ipc.shm_write floor for
  // collates timed in plain memory does not apply
  bool collate_in_shared_memory = false;
  double worker_s_per_batch = 0.0;   // a worker's other CPU per batch (index fetch, pickling, loop)
  // The share of worker_s_per_batch that runs after the collate and before the batch reaches the pin thread or the
  // loop (the put); the rest runs on the worker's core right after the hand-off, before its next batch. Measured in
  // run 79 (validation-runs.md, finding 1): over 605 batches the pin thread waited for, collate's return to its get
  // took 6.16 ms at the median where the whole key before the hand-off gives 8.00 and 0.67 of it gives the
  // measurement (run 78's readings 0.6-0.78). 1 keeps the whole key before the hand-off, as before the 86th session.
  static constexpr double kDefaultWorkerPutShare = 0.67;
  double worker_put_share = kDefaultWorkerPutShare;
  // The share of worker_s_per_batch the worker spends after a collate before it takes its next index (its
  // turnaround). 1 (the default) keeps the whole key on the worker's path, the put before the hand-off and the rest
  // after it, as above. Below 1 the put runs beside the worker, as PyTorch's queue feeder thread pickles and sends
  // the batch: the feeder runs the put (worker_put_share of the key) on a core beside the worker, counted busy, and
  // hands the batch to the pin thread or the loop when it ends, while the worker spends this share of the key on its
  // core and takes its next index (the put's hold on the worker's GIL is in the per-sample costs measured inside a
  // loader: about 1 ms a batch, validation run 81, finding 2). Validation run 79, finding 2 and run 80, finding 3: the real
  // workers start their next batch 1.7-2.9 ms after a collate where their key is 4-6 ms, and at 4 workers the whole
  // key on their path keeps the simulated workers bunched. A what-if until the table says (convert
  // --worker-turnaround-share).
  double worker_turnaround_share = 1.0;
  // Whether the put runs beside the worker, on its feeder (worker_turnaround_share below 1, with a key to run)
  bool put_beside_worker() const { return worker_turnaround_share < 1.0 && worker_s_per_batch > 0.0; }
  // The pin thread's time off its core per batch while a batch is always ready for it: the fd hand-off from the
  // worker's resource sharer and the kernel's waits inside the receive (validation run 36: its wall per batch is
  // its CPU / 0.956 in pin-bound probes). Holds no core, no GIL, no memory map.
  double pin_thread_wait_s_per_batch = 0.0;
  // The main thread's own Python in next() once the batch is there, with workers: the in-order bookkeeping and the
  // next index's hand-out (_process_data, _try_put_index). It runs before the batch's copy is enqueued, so with a
  // sync every step the GPU waits for it (validation run 42, finding 8: about 0.2 ms a step, measured by the probes
  // around each case as the main thread's CPU per batch of a pinning loader). An unpinned loader's receive
  // (ipc.receive_s_per_batch) is usually measured as the whole of next(): leave this 0 there unless it is not.
  double main_next_s_per_batch = 0.0;
  int slow_worker = -1;              // index of a straggling worker (-1: none)
  double slow_worker_factor = 1.0;   // how many times longer its batches' data work takes
  // the straggler's extra time runs Python with its process's GIL held, so its fd sharer cannot hand the pin thread
  // the batch before it until that stretch ends (validation run 55)
  bool slow_worker_holds_gil = false;
  // A diagnostic: per worker, measured batch times (wall seconds from its first __getitem__ to its collate's return)
  // played back in turn, from its first batch and round again, in place of its loads, collate and wander
  // (loader.replay_worker_batches: [{"worker": i, "batch_s": [...]}]); worker_s_per_batch follows each at the batch's
  // pace (replay_mean_batch_s). With a case's own times this asks whether the rest of the pipeline (round robin,
  // slots, pin thread, loop) turns them into the measured steps.
  std::vector<std::vector<double>> replay_batch_s;
  // The mean of worker w's played-back times (1 where it has none): a batch's time over it is the batch's pace.
  double replay_mean_batch_s(int w) const {
    if (w < 0 || w >= static_cast<int>(replay_batch_s.size()) || replay_batch_s[w].empty()) return 1.0;
    double sum = 0.0;
    for (double x : replay_batch_s[w]) sum += x;
    return sum / static_cast<double>(replay_batch_s[w].size());
  }
};

enum class CopyStream { kDefault, kSide };

struct TransferConfig {
  bool non_blocking = false;
  CopyStream copy_stream = CopyStream::kDefault;
  // The loop thread's host time in the batch's .to() call before the copy is enqueued (Python dispatch, the
  // caching allocator, cudaMemcpyAsync), with the GIL (validation run 43: 0.15-0.32 ms a pinned batch).
  double copy_call_s_per_batch = 0.0;
};

// One point of a GPU step's time against the GPU's recent busy share (0 = rested, 1 = back to back).
struct DutyPoint {
  double duty = 0.0;
  double step_s = 0.0;
};

struct HumpPoint {
  double duty = 0.0;
  double amplitude = 0.0;
};

// training.gpu_clock_humps: the GPU clock's humps at a high duty (validation-runs.md run 45, finding 2), a
// one-second two-level wave on the step's GPU time whose amplitude follows the GPU's busy share (the duty curve's
// where the scenario has one, else averaged over one period). Empty amplitude curve: none.
struct GpuClockHumps {
  double period_s = 1.0;
  double high_share = 0.25;
  std::vector<HumpPoint> amplitude_vs_gpu_duty;  // sorted by duty; linear between points, flat beyond
  bool enabled() const { return !amplitude_vs_gpu_duty.empty(); }
  double amplitude_at(double duty) const;
};

struct TrainingConfig {
  double forward_s = 0.0;   // with backward_s; when only step_s is given, forward = step/3
  double backward_s = 0.0;  // backward + optimizer
  bool split_given = false; // forward/backward given by the user
  double step_cv = 0.0;
  double host_s_per_step = 0.0;
  // The loop's Python of a step (its .to() call and its launches) run right after the previous step's launches,
  // with no block between (no sync, no wait for a batch or for the launch queue), over the same after a block:
  // host_s_per_step is timed after a sync. Validation-runs.md run 62, finding 10: in sync_every 8 loops a batch in
  // hand took 0.79 ms right after launches and 1.15 ms right after the sync step (median over 80 cases). 1: no
  // difference (the model until the fifty-ninth session).
  double back_to_back_host_factor = 1.0;
  // The loop's host work keeps needing the process's memory map (a Python-heavy loop: allocations, page
  // faults), so it stalls while the pin thread maps, touches or unmaps a worker's batch (validation run 17:
  // ResNet-50's loop yes, a loop of a few GEMM launches no). False: the loop never waits for the map.
  bool host_needs_memory_map = false;
  // How many times a step such a loop needs the map (validation run 18: its thread's minor page faults a step
  // beside the pin thread's work); 0: one need per kMemoryMapCheckIntervalS of its host time.
  double memory_map_needs_per_step = 0.0;
  // How long one such need waits when it finds the pin thread working on a mapping; 0: until that work ends
  // (the whole map, touch and unmap of the batch). Validation run 23 (finding 6): a real ResNet-50 loop loses
  // 3.5-5.5 ms per batch the pin thread handles during its host work, 40-50% of that work's length: it slows
  // beside it, each fault waiting a fraction of a millisecond, rather than stopping.
  double memory_map_wait_s = 0.0;
  // GPU time still to run when a host-bound step's last launch returns: the kernels launched last (the
  // optimizer's, the loss) and the backlog backward's C++ launches left. A step's kernels end no earlier than
  // its last launch plus this; a sync each step waits for it. Measured as the plain synthetic loop's step
  // (loss.item() each step) less its launch time, where the launches outlast the GPU step (validation run
  // 25: ResNet-50 1.47 ms alone; 0.2-1.5 ms of sync wait a step in its host-bound cases). 0: none.
  double launch_tail_s = 0.0;
  // JPEGs decoded on the GPU by the training loop (torchvision.io.decode_jpeg(device="cuda"), nvJPEG): the workers
  // hand over encoded bytes, and each sample costs this much GPU time on the compute stream before the step's kernels
  // (calibrate's decode.gpu_nvjpeg batched_s_per_image) and this much of the loop thread's CPU for the call (nvJPEG's
  // host-side Huffman decode and launches). The synthetic-data twin decodes nothing: its data is already there.
  double gpu_decode_s_per_sample = 0.0;
  double gpu_decode_host_s_per_sample = 0.0;
  int sync_every_steps = 0;
  int max_steps_ahead = 2;
  std::int64_t steps = 2000;
  std::int64_t warmup_steps = -1;  // resolved

  // The GPU's boost clock holds while it rests: the H200 ran mm:25 in 25.0 ms isolated and 29.9 ms back to
  // back, and in between inside input-bound cases (validation run 12). Empty: every step takes step_s.
  std::vector<DutyPoint> step_s_vs_gpu_duty;  // sorted by duty
  // How fast the GPU's busy share (the curve's x) follows its load: the time constant of its exponential
  // average. The default keeps a periodic loop's share at its long-run duty; a short one (tens of ms,
  // as the H200's clock: validation run 14, finding 11) lets a burst of back-to-back steps slow down
  // within a few steps and a step after a long wait run rested.
  double gpu_duty_time_constant_s = kGpuDutyTimeConstantS;
  GpuClockHumps gpu_clock_humps;

  double step_s() const { return forward_s + backward_s; }
  // The step's GPU time at a recent busy share `duty` (linear between points, flat beyond); step_s
  // without a curve.
  double step_s_at_duty(double duty) const;
  // The step time when the GPU is the bottleneck (duty 1): its capacity.
  double saturated_step_s() const { return step_s_at_duty(1.0); }
};

// training.step_s_vs_gpu_duty for a scenario that gives none: the profile's measured shape
// (compute.step_vs_gpu_duty, relative to an isolated step) scaled so that duty 1 takes `step_s`,
// the synthetic-data step a user times back to back. Empty when the profile has no shape.
std::vector<DutyPoint> duty_curve_from_profile(double step_s, const ComputeProfile& compute);

struct DdpConfig {
  double gradient_bytes = 0.0;
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  std::vector<double> parameter_bytes;  // gradients in backward order; empty: split gradient_bytes evenly
  // DDP's own host work per step, on the thread that runs backward while the training loop waits
  // in loss.backward() (C++, GIL released): per-parameter gradient scaling and bucket copies, and
  // each bucket's all-reduce call (docs/ddp-validation.md).
  double host_s_per_step = 0.0;
  double host_s_per_parameter = 0.0;  // needs parameter_bytes (the count of parameter tensors)
  double host_s_per_bucket = 0.0;

  // Bucket sizes in reduction order, by PyTorch's rule when parameter sizes are known.
  std::vector<double> bucket_bytes() const;
  // Seconds of DDP host work per step: the three costs above for this model's tensors and buckets.
  double host_s() const;
};

struct Scenario {
  std::string file;  // where it came from, for messages
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  NodeConfig node;
  ClusterConfig cluster;
  DatasetConfig dataset;
  StorageConfig storage;
  LoaderConfig loader;
  TransferConfig transfer;
  TrainingConfig training;
  DdpConfig ddp;
  FsdpConfig fsdp;  // off unless the scenario has an fsdp section (not with DDP's gradient_bytes)
  SequenceConfig sequence;
  MeanBatchShape sequence_mean;  // the sequence's expected batch (expected_batch_shape), set by parse_scenario

  // The collated batch's bytes: batch_size x item_bytes, or a sequence's mean over its batches' shapes.
  double batch_bytes() const { return sequence.enabled ? sequence_mean.bytes : loader.batch_size * dataset.item_bytes; }
  // Samples a batch holds on average: batch_size, or a packed sequence batch's mean.
  double mean_samples_per_batch() const { return sequence.enabled ? sequence_mean.samples : loader.batch_size; }
  // One batch of `loader_batch` samples (rows with a packed sequence): its bytes from item_bytes, or its sequence
  // shape drawn from a stream seeded with `stream_seed` (made only when there is a sequence to draw).
  BatchShape batch_shape(int loader_batch, std::uint64_t stream_seed) const;
  // A batch's GPU step over training.step_s's (1 without a sequence; its per-token and attention terms with one).
  double step_factor(const BatchShape& shape) const;
  // step_factor's mean over the sequence's batches (exact: the step is linear in the shape's sums).
  double mean_step_factor() const;
  // The training loop's host time per step: its own (Python, launches) plus DDP's host work.
  double loop_host_s() const { return training.host_s_per_step + ddp_host_s(); }
  // The loop thread's Python in next() a step beside its own (loader.main_next_s_per_batch; workers only).
  double main_next_s() const { return loader.num_workers > 0 ? loader.main_next_s_per_batch : 0.0; }
  // The loop thread's time a step outside its own step's Python: the rest of next() and the batch's .to() call.
  double loop_batch_s() const {
    return main_next_s() + transfer.copy_call_s_per_batch + gpu_decode_host_s();
  }
  // The loop thread's CPU a step for a batch's GPU JPEG decode call (training.gpu_decode_host_s_per_sample).
  double gpu_decode_host_s() const { return mean_samples_per_batch() * training.gpu_decode_host_s_per_sample; }
  // The GPU time a step for the batch's JPEG decode (training.gpu_decode_s_per_sample), before its kernels.
  double gpu_decode_s() const { return mean_samples_per_batch() * training.gpu_decode_s_per_sample; }
  // Everything the loop's thread runs a step with a loader: its own host time, the rest of next() and the .to() call.
  double loop_thread_s() const { return loop_host_s() + loop_batch_s(); }
  // The share of a host-bound loop's steps whose .to() call and launches run right after the previous step's
  // launches (training.back_to_back_host_factor): all without a sync, k - 1 of every k with a sync every k steps;
  // none where every step blocks anyway (a blocking or pageable copy, or loading inline without workers).
  double back_to_back_share() const {
    if (loader.num_workers == 0 || !loader.pin_memory || !transfer.non_blocking) return 0.0;
    const int k = training.sync_every_steps;
    return k > 0 ? (k - 1.0) / k : 1.0;
  }
  // loop_thread_s as a loop that never waits for a batch runs it: its back-to-back steps' .to() call and launches at
  // the factor (next()'s own Python and DDP's reducer work as they are).
  double host_bound_loop_thread_s() const {
    return loop_thread_s() + back_to_back_share() * (training.back_to_back_host_factor - 1.0) *
                                 (training.host_s_per_step + transfer.copy_call_s_per_batch);
  }
  // A host-bound loop's wait a step for the kernels launched last: the launch tail, once every sync.
  double sync_tail_s_per_step() const {
    return training.sync_every_steps > 0 ? training.launch_tail_s / training.sync_every_steps : 0.0;
  }
  double ddp_host_s() const { return world_size() > 1 ? ddp.host_s() : 0.0; }
  // Ranks of the job: every node's GPUs (DistributedSampler's num_replicas, the collectives' ranks).
  int world_size() const { return node.gpus * cluster.nodes; }
  // The collectives a step runs: DDP's gradient all-reduce (several ranks, gradients to reduce), FSDP's all-gathers
  // and reduce-scatters (several ranks, units).
  bool all_reduces_gradients() const { return world_size() > 1 && ddp.gradient_bytes > 0.0; }
  bool shards_parameters() const { return world_size() > 1 && fsdp.enabled(); }
  // Files opened a sample on average (dataset.samples_per_file).
  double opens_per_sample() const { return 1.0 / static_cast<double>(dataset.samples_per_file); }
  // Ranks the simulator runs side by side: each simulated node's GPUs (the ranks whose own draws a collective waits
  // for; the job's other nodes are taken to run as node 0 does).
  int simulated_ranks() const { return node.gpus * cluster.simulated_nodes; }
  // Steps until the loader's first fill has drained: prefetch_factor x num_workers batches in flight, plus two
  // (the default training.warmup_steps; sweep and recommend raise a point's warmup to it).
  std::int64_t prefetch_fill_steps() const {
    return (loader.num_workers > 0 ? static_cast<std::int64_t>(loader.prefetch_factor) * loader.num_workers : 0) + 2;
  }
  // DistributedSampler's share: the dataset over every rank of the job, the last padded (drop_last=False)
  std::int64_t samples_per_rank() const { return (dataset.num_samples + world_size() - 1) / world_size(); }
  // Rows of an epoch's last batch where it is smaller than loader.batch_size (the rank's samples not a multiple of it,
  // drop_last off); 0 where every batch is whole.
  std::int64_t last_batch_rows() const { return loader.drop_last ? 0 : samples_per_rank() % loader.batch_size; }
  // Batches per epoch per rank, as len(DataLoader) with drop_last.
  std::int64_t batches_per_epoch() const;
};

// Applies `--set a.b.c=VALUE` (VALUE parsed as JSON, else taken as a string) to a document.
// Throws InputError (file "--set") when the path crosses a non-object or is malformed.
void apply_override(nlohmann::json& document, const std::string& assignment);

// Parses and validates. Values the profile provides (cores, storage) are resolved against it.
// Throws InputError on any bad value.
Scenario parse_scenario(const nlohmann::json& document, const std::string& file, const Profile& profile);

// Reads a file into JSON, throwing InputError for a missing, unreadable or malformed file.
nlohmann::json read_json_file(const std::string& path);

}  // namespace pipeplan
