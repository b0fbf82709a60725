// The SimGrid model of one training node. See simulation.hpp for the chain and
// docs/model.md for every modelling decision and its source.
//
// Resources:
//   host "cpu"      node.cpu_cores cores at 1e9 flop/s; 1 flop = 1 ns of one otherwise idle
//                   core. Non-linear sharing applies the measured per-core speed curve and the
//                   oversubscription cost to everything that runs there (workers, main
//                   threads, pin threads).
//   host "storage"  one core whose speed is the device's read bandwidth (1 flop = 1 byte): one device
//                   shared by every reader of the node, max-min fair like a SimGrid disk. Not a
//                   sg4::Disk: in SimGrid 3.32 a worker that reads a Disk and then executes grew
//                   quadratically with steps (40k cold steps 3.3 s against 1.1 s warm; the finished
//                   I/O activities stay in the actor's list that every Exec's end scans).
//   host "gpuR"     stream actors of rank R; GPU work is sleep_for (each stream runs one op at
//                   a time, so nothing on it is shared).
//   host "baseline" the synthetic-data twin: a main thread per rank with no input work.
//
// Actors per rank: N workers, a pin thread (pin_memory with workers), the main thread (the
// training loop), a compute stream, a copy stream (copy_stream=side), and one communication actor
// for DDP (or FSDP). Only the main threads are non-daemon: the simulation ends when every rank has
// finished its steps.
//
// Several nodes (cluster.simulated_nodes): each simulated node is a World of its own, with its own
// hosts ("nN-cpu", "nN-gpuR", ...) and ranks drawing apart from node 0's; they share the
// collectives (Comm, FsdpComm), the length deal (LineDeal) and, where they read one store
// (storage.nodes_sharing), the storage host (Store). Node 0 is traced and reported.

#include "sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "models/analytic.hpp"
#include "models/collectives.hpp"
#include "models/cost_models.hpp"
#include "models/distribution.hpp"
#include "sim/arrival_order.hpp"
#include "sim/step_stats.hpp"
#include "sim/sync.hpp"

namespace sg4 = simgrid::s4u;

namespace pipeplan::sim {

namespace {

constexpr double kFlopsPerCoreSecond = 1e9;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The measured window: [start_s, end_s); both unknown (infinite) until the steps that bound
// it complete. Busy time is added when an activity completes, clipped to the window.
struct Window {
  double start_s = kInf;
  double end_s = kInf;
  double overlap(double a, double b) const {
    const double lo = std::max(a, start_s);
    const double hi = std::min(b, end_s);
    return hi > lo ? hi - lo : 0.0;
  }
};

// Track ids inside one rank's trace process.
enum Track : int { kMainTrack = 1, kPinTrack = 2, kCopyTrack = 3, kComputeTrack = 4, kCommTrack = 5, kWorkerTrack0 = 10 };
// A worker's own loop after its collate (worker_s_per_batch: the put), traced apart so a batch's collate end reads
// as the harness's timeline records it (timeline_analysis.PUT_SPAN)
constexpr const char* kPutSpan = "worker loop (the put)";
constexpr const char* kAfterHandoffSpan = "worker loop (after the hand-off)";
// With loader.worker_turnaround_share below 1: the worker's own part before its next index, and the put on the
// worker's feeder track (kFeederTrack0 + w), beside the worker
constexpr const char* kTurnaroundSpan = "worker loop (turnaround)";
constexpr int kFeederTrack0 = 1000;

struct Task {
  std::int64_t batch = 0;  // global batch number (across epochs)
  BatchShape shape;        // its samples and bytes (a sequence batch: its tokens and padding too)
  double sent_s = 0.0;
};

struct Batch {
  std::int64_t batch = 0;
  BatchShape shape;
  double sent_s = 0.0;
  int worker = -1;
};

// A batch on its worker's feeder (loader.worker_turnaround_share below 1): handed off once its put's core seconds
// (worker_put_share of the key at the batch's pace) have run
struct Feed {
  Batch batch;
  double put_start_s = 0.0;
  double put_core_s = 0.0;
};

// The GPU runs a step's kernels in at most this many pieces, each once the loop has launched the ones before it
// (validation run 74, finding 5): enough to place a GIL hold of a few ms inside 15-25 ms of launches, few enough to
// keep a step's events cheap.
constexpr int kMaxLaunchPieces = 16;

struct StreamOp {
  enum class Kind { kCopy, kCompute } kind = Kind::kCompute;
  std::int64_t step = 0;
  double duration_s = 0.0;           // copy: its time; compute: forward+backward (with noise)
  double decode_s = 0.0;             // compute: the batch's GPU JPEG decode, before the step's kernels
  std::int64_t wait_side_ops = 0;    // compute on a side-stream copy: side ops to wait for
  bool first_part = false;           // compute: a new shape's kernels launched before its last plan (not a whole step)
  // compute: the step's kernels run in this many equal pieces, piece i once the loop has launched its first i
  // pieces (launched_pieces >= launch_piece_base + i); 0 or 1: the whole step from the first launch
  int launch_pieces = 0;
  std::int64_t launch_piece_base = 0;
};

struct Stream {
  Fifo<StreamOp> queue;
  Counter completed_ops;
  std::int64_t enqueued_ops = 0;
};

// A count that changes at events (activities running, reads in flight) and its integral over simulated time.
struct CountOverTime {
  int now = 0;
  double integral = 0.0, since_s = 0.0;  // the integral up to since_s
  double integral_at(double now_s) const { return integral + now * (now_s - since_s); }
  void add(int delta, double now_s) {
    integral = integral_at(now_s);
    since_s = now_s;
    now += delta;
  }
};

// DDP gradient all-reduce shared by all ranks of one world (real or baseline).
struct Comm {
  std::vector<double> bucket_bytes;
  double total_bytes = 0.0;  // of all buckets: backward splits in these proportions
  std::vector<double> bucket_time_s;
  double host_s_per_step = 0.0;  // DDP's reducer work on the loop's thread (Scenario::ddp_host_s, once)
  int ranks = 0;           // ranks whose buckets each all-reduce waits for (every simulated node's)
  Counter buckets_ready;   // sum over ranks of ready signals
  Counter buckets_done;    // buckets reduced (node-wide)
  double busy_s = 0.0;
  // collectives running (0 or 1) and its integral: of a rank's wait at the all-reduce, the part NCCL ran (the rest
  // it waited for another rank's gradients)
  CountOverTime running;
};

// FSDP's collectives shared by all ranks of one world (real or baseline): a step's ops in issue order
// (models::fsdp_step_ops), run one after another on NCCL's stream once every rank has issued each.
struct FsdpComm {
  std::vector<FsdpOp> ops;
  std::vector<double> op_s;
  std::vector<std::string> op_names;  // the trace's name of each op ("all_gather unit 3 (backward)")
  std::vector<Counter*> issued;  // each rank's count of ops issued (in the ops' order, step after step)
  Counter done;                  // ops finished (every rank's)
  double busy_until_s = 0.0;     // when the collective running now ends (compute beside it runs slower)
  double busy_s = 0.0;
  CountOverTime running;         // as Comm::running
  // an op's index in `ops`: the forward and backward all-gather and the reduce-scatter of each unit
  std::vector<int> forward_gather, backward_gather, reduce_scatter;
  double total_parameter_bytes = 0.0;
};

struct World;

struct Rank {
  int id = 0;
  bool synthetic = false;
  World* world = nullptr;
  Comm* comm = nullptr;
  FsdpComm* fsdp = nullptr;
  Counter fsdp_issued;
  sg4::Host* cpu = nullptr;
  sg4::Host* gpu = nullptr;
  sg4::MutexPtr gil;  // the main process's interpreter lock (main thread + pin thread)
  // The loop's Python piece running now with the GIL held (null between pieces): the pin thread suspends it to take
  // the GIL at the loop's next op (receive_with_gil).
  sg4::ExecPtr main_python;
  // The main process's memory map, held by the pin thread while it maps, first-touches and unmaps a worker's
  // batch; the loop's host work waits for it at every memory_map_chunks piece (validation run 17).
  sg4::MutexPtr memory_map;
  // loader.slow_worker.holds_gil: the straggler's process's interpreter lock, held through its extra time; the pin
  // thread's receive of that worker's batch takes it (its fd sharer thread serves the storage with the GIL)
  sg4::MutexPtr slow_worker_gil;
  bool memory_map_busy = false;  // the pin thread is inside its map, touch and unmap of a batch
  Counter memory_map_releases;    // how many times the pin thread has left that work (wakes a slowed loop)
  Rng rng{1};

  // DataLoader
  std::vector<std::unique_ptr<Fifo<Task>>> worker_tasks;
  std::vector<std::unique_ptr<Fifo<Feed>>> worker_feeds;  // worker -> its feeder (worker_turnaround_share < 1)
  Fifo<Batch> arrivals;  // worker -> pin thread or main thread, in arrival order
  Fifo<Batch> pinned;    // pin thread -> main thread
  std::int64_t outstanding = 0;   // PyTorch's _tasks_outstanding
  std::vector<int> worker_outstanding;  // PyTorch's _workers_num_tasks
  double outstanding_integral = 0.0, outstanding_last_s = 0.0;
  double pinned_bytes = 0.0;
  std::vector<double> batch_done_s;  // by batch index: when its worker finished it (-1: not yet)

  // Streams
  Stream compute, side;
  Counter launched_steps;   // the host has finished launching step i's kernels
  Counter launched_pieces;  // pieces of the loop's launches done, over all steps (StreamOp::launch_pieces)
  std::int64_t launch_pieces_pushed = 0;
  Counter computed_steps;

  // Per step records
  std::vector<double> step_end_s, data_wait_start_s, data_wait_end_s, copy_start_s, copy_end_s, launch_end_s;
  std::vector<int> step_samples;
  std::vector<double> step_tokens, step_slots;  // a sequence batch's real tokens and token positions (padding included)

  // Busy time inside the window
  double worker_busy_s = 0.0, pin_busy_s = 0.0, main_receive_busy_s = 0.0, host_busy_s = 0.0;
  double worker_storage_wait_s = 0.0;  // workers in their opens and cold reads (no core), in the window
  double new_shape_busy_s = 0.0;    // building kernel plans for new batch shapes (inside host_busy_s), in the window
  std::int64_t new_shapes_in_window = 0;
  double inline_load_busy_s = 0.0, copy_busy_s = 0.0, compute_busy_s = 0.0;
  double idle_data_s = 0.0, idle_copy_s = 0.0, idle_host_s = 0.0, exposed_comm_s = 0.0;
  double idle_ranks_s = 0.0;  // at a collective, waiting for another rank to reach it (not the collective's own time)
  double gil_wait_main_s = 0.0, gil_wait_pin_s = 0.0;  // waiting for the other thread to drop the GIL
  double gil_held_main_s = 0.0, gil_held_pin_s = 0.0;
  double memory_map_wait_main_s = 0.0, memory_map_held_pin_s = 0.0;
  double main_wait_for_batch_s = 0.0;  // the loop blocked in next() until a batch arrives
  double latency_sum_s = 0.0;
  std::int64_t latency_count = 0;
  std::int64_t epochs_started = 0;
  std::int64_t activities = 0;
  // cpu.core_speed_common_share: the workers' shared wander's log deviation and when it last moved (CoreWander)
  double common_wander_x = 0.0, common_wander_at_s = 0.0;
  bool common_wander_drawn = false;
  std::int64_t replay_wrapped_batches = 0;  // replayed batches past a worker's list, played again from its start
};


// Spans of one kind (cold reads, a batch's getitems) and how many run at once: over every span, the count in flight
// during it, itself included, weighted by its length (the integral of the count over the span, summed, over the
// summed lengths). calibrate's readers_in_flight_mean and the harness's getitem_in_flight_mean count the same.
struct InFlightMeter {
  CountOverTime count;
  double overlap_integral = 0.0, span_time_s = 0.0;
  // A span starts: the count's integral at its start, for end().
  double begin(double now_s) {
    count.add(+1, now_s);
    return count.integral_at(now_s);
  }
  void end(double start_s, double integral_at_start, double now_s) {
    overlap_integral += count.integral_at(now_s) - integral_at_start;
    span_time_s += now_s - start_s;
    count.add(-1, now_s);
  }
  double mean() const { return span_time_s > 0.0 ? overlap_integral / span_time_s : 0.0; }
};

class LineDeal;

// A storage device and what its readers did in the window: one a node, or one shared by the simulated nodes that read
// the same store (storage.nodes_sharing > 1 with cluster.simulated_nodes > 1: their shares pooled, each node's reads
// contending with the others' as they come).
struct Store {
  sg4::Host* host = nullptr;
  int nodes = 1;  // the nodes whose shares it pools: its bandwidth is storage.read_bytes_per_s x nodes
  // workers in a storage read (calibrate's readers_in_flight_mean, for storage_check.py)
  InFlightMeter readers;
  double device_bytes = 0.0;  // bytes through the device inside the measured window
  // the store's metadata server (storage.metadata_ops_per_s > 0): one core, 1 flop = one file opened, shared by
  // every opener of the nodes it serves as their opens come (processor sharing)
  sg4::Host* metadata = nullptr;
  double opens_in_window = 0.0;  // files opened inside the measured window, for the metadata stage's busy share
};

struct World {
  const Scenario* scenario = nullptr;
  const Profile* profile = nullptr;
  TraceRecorder* trace = nullptr;
  std::int64_t steps = 0;
  std::int64_t warmup = 0;
  Store* store = nullptr;  // see "storage" at the top
  std::vector<std::unique_ptr<Rank>> ranks;  // real ranks first, then baseline ranks
  // the collectives, shared by every simulated node's ranks (cluster.simulated_nodes)
  std::shared_ptr<Comm> comm, baseline_comm;
  std::shared_ptr<FsdpComm> fsdp, baseline_fsdp;
  int node = 0;  // which simulated node this is: node 0's is the one reported
  Window window, baseline_window;
  std::vector<int> step_done_count, baseline_step_done_count;
  std::vector<double> node_step_end_s, baseline_step_end_s;
  // every cold read's wait (its per-request latency and its time on the device) and the files it read: a file's
  // mean wait, against the cases' in-situ cold getitem less its CPU (validation run 51, finding 3)
  double storage_wait_s = 0.0, storage_files = 0.0;
  // a histogram's lines dealt without replacement (null otherwise): shared by every rank and twin of every
  // simulated node
  std::shared_ptr<LineDeal> line_deal;
  // workers between a batch's first read and its collate (PyTorch's __getitem__ calls, read and load): the
  // harness's in-situ getitem_in_flight_mean, like for like (validation run 52)
  InFlightMeter workers_in_getitem;
  int finished_mains = 0;
  // activities running on the node's CPU right now (not the synthetic twin's); average busy cores over an interval
  // are the difference of two readings of its integral divided by its length
  CountOverTime cpu_running;
  // the integral's readings at the measured window's start and end: the window's mean busy cores
  double cpu_integral_window_start = 0.0, cpu_integral_window_end = 0.0;

  int gpus() const { return scenario->node.gpus; }
};

// ---------------------------------------------------------------- small cost helpers

// A batch's shape, the same for the rank and its synthetic twin: drawn from a stream of its own (rank, batch number)
// so that the twin's step on batch i costs what the rank's does whatever order the events ran in.
BatchShape shape_of(const Scenario& s, int rank, std::int64_t batch, int loader_batch) {
  return s.batch_shape(loader_batch,
                       derive_seed(s.seed, 0x5E9A00ULL + static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(batch)));
}

// DistributedSampler's deal of a histogram's lines (sequence dealt without replacement; RandomSampler's on one rank):
// each epoch one permutation of the dataset, each rank a disjoint share of it (every rank's lines together are the
// epoch's first ranks x samples-per-rank lines). The epoch's lines are dealt from one pool, batch by batch, in the
// order the ranks first ask: each draw is uniform over the lines not yet dealt, whoever asks, so a rank's lines are
// distributed as its share of one randperm is (the positions each rank takes depend only on lines already dealt:
// Kallenberg's predictable sampling), and no line goes to two ranks in one epoch. A rank's loop and its synthetic
// twin each ask for every batch of the rank in batch order; the first draws it, the other takes the kept copy. One
// draw stream (rank 0's seed: on one GPU the deal is the pool the rank always had).
class LineDeal {
 public:
  LineDeal(const Scenario& s, std::int64_t batches_per_epoch_all_ranks)
      : s_(s), per_epoch_(batches_per_epoch_all_ranks), rng_(derive_seed(s.seed, 0x5E9B00ULL)),
        kept_(static_cast<std::size_t>(s.simulated_ranks())) {}

  BatchShape shape(int rank, std::int64_t batch, std::int64_t epoch, int loader_batch) {
    Kept& k = kept_[static_cast<std::size_t>(rank)];
    if (batch < k.first_batch + static_cast<std::int64_t>(k.shapes.size())) {
      // the rank's other loop drew it; both ask in batch order, so it is the oldest kept
      if (batch != k.first_batch) throw std::logic_error("LineDeal: a rank's batches asked out of order");
      const BatchShape shape = k.shapes.front();
      k.shapes.pop_front();
      ++k.first_batch;
      return shape;
    }
    if (batch != k.first_batch + static_cast<std::int64_t>(k.shapes.size()))
      throw std::logic_error("LineDeal: a rank's batch skipped");
    auto pool = pools_.try_emplace(epoch, s_.sequence).first;
    const BatchShape shape = draw_batch_shape(s_.sequence, loader_batch, rng_, &pool->second.lines);
    // every rank's batches of the epoch drawn: its permutation is done with
    if (++pool->second.batches_drawn == per_epoch_) pools_.erase(pool);
    k.shapes.push_back(shape);
    return shape;
  }

 private:
  struct EpochPool {
    explicit EpochPool(const SequenceConfig& seq) : lines(seq) {}
    LengthPool lines;
    std::int64_t batches_drawn = 0;
  };
  // a rank's batches drawn by one of its two loops and not yet taken by the other: batches first_batch, ...
  struct Kept {
    std::int64_t first_batch = 0;
    std::deque<BatchShape> shapes;
  };
  const Scenario& s_;
  std::int64_t per_epoch_;
  Rng rng_;
  std::map<std::int64_t, EpochPool> pools_;  // by epoch: the lines its permutation has not dealt yet
  std::vector<Kept> kept_;                   // by rank
};

// The shapes of one rank's batches, asked for in batch order. Lengths drawn independently (a law, or a histogram with
// sequence.replacement): each batch from a stream of its own (shape_of). A histogram dealt without replacement: from
// the world's LineDeal, which the rank's loop and its synthetic twin share.
class ShapeStream {
 public:
  ShapeStream(const Scenario& s, LineDeal* deal, int rank) : s_(s), deal_(deal), rank_(rank) {}

  BatchShape next(std::int64_t batch, std::int64_t epoch, int loader_batch) {
    if (deal_ == nullptr) return shape_of(s_, rank_, batch, loader_batch);
    return deal_->shape(rank_, batch, epoch, loader_batch);
  }

 private:
  const Scenario& s_;
  LineDeal* deal_;
  int rank_;
};

// Sum of `n` per-sample draws. Beyond 64 samples the sum is drawn from the normal law with
// the same mean and variance (central limit): exact enough, and it keeps 10k-step runs fast.
double sum_of_draws(const Distribution& d, int n, Rng& rng) {
  if (d.cv <= 0.0 || d.kind == Distribution::Kind::kConstant) return d.mean * n;
  if (n <= 64) {
    double total = 0.0;
    if (d.kind == Distribution::Kind::kLognormal) {
      // sample()'s lognormal draw with its sigma worked out once a batch, not once a sample: the same draws, without
      // a log1p and a sqrt per sample (the cold benchmark's draws, sessions.md)
      const double sigma2 = std::log1p(d.cv * d.cv);
      const double sigma = std::sqrt(sigma2);
      for (int i = 0; i < n; ++i) total += lognormal_draw(d.mean, sigma, sigma2, rng);
      return total;
    }
    for (int i = 0; i < n; ++i) total += sample(d, rng);
    return total;
  }
  const double mean = d.mean * n;
  const double sd = d.mean * d.cv * std::sqrt(static_cast<double>(n));
  return std::max(0.05 * mean, mean + sd * rng.standard_normal());
}

// the main thread's receive of an unpinned batch from a worker, in next() (a pinned one goes to the pin thread);
// its release comes after the step (MainLoop::release_batch)
double ipc_receive_s(const Profile& p, double bytes) { return unpinned_map_s(p, bytes); }

double pin_copy_s(const Profile& p, double bytes) { return bytes / p.host.pin_copy_bytes_per_s; }

double h2d_copy_s(const Scenario& s, const Profile& p, double bytes) {
  return h2d_batch_copy_s(p, bytes, s.loader.pin_memory, s.loader.num_workers > 0);
}

// A sequence batch's tokenization in its __getitem__ calls (sequence.load_s_per_token), on one idle core.
double tokenize_s(const Scenario& s, const BatchShape& shape) {
  return s.sequence.enabled ? s.sequence.load_s_per_token * shape.load_tokens : 0.0;
}

// CPU work on the actor's host; returns the simulated seconds it took. With `running`, the work is published there
// while it runs so that another actor can suspend it (the loop's Python, for the pin thread's receive).
double run_cpu(Rank& r, double core_seconds, sg4::ExecPtr* running = nullptr) {
  if (core_seconds <= 0.0) return 0.0;
  const double t0 = sg4::Engine::get_clock();
  if (!r.synthetic) r.world->cpu_running.add(+1, t0);
  if (running == nullptr) {
    sg4::this_actor::execute(core_seconds * kFlopsPerCoreSecond);
  } else {
    *running = sg4::this_actor::exec_async(core_seconds * kFlopsPerCoreSecond);
    (*running)->wait();
    *running = nullptr;
  }
  if (!r.synthetic) r.world->cpu_running.add(-1, sg4::Engine::get_clock());
  ++r.activities;
  return sg4::Engine::get_clock() - t0;
}

// Holds the GIL for a thread's Python (or GIL-held C) work, for the scope. With pin_memory the training loop and
// the pin thread share the main process's one interpreter lock (validation run 16, finding 2): the wait for it and
// the time held are counted inside the window, and a wait is drawn on the thread's track.
class GilHold {
 public:
  GilHold(Rank& r, int track, double& wait_s, double& held_s, std::int64_t batch) : r_(r), held_s_(held_s) {
    const double t0 = sg4::Engine::get_clock();
    r.gil->lock();
    acquired_s_ = sg4::Engine::get_clock();
    if (acquired_s_ > t0) {
      wait_s += r.world->window.overlap(t0, acquired_s_);
      if (!r.synthetic) r.world->trace->span(r.id, track, "wait for the GIL", t0, acquired_s_, batch);
    }
  }
  ~GilHold() {
    held_s_ += r_.world->window.overlap(acquired_s_, sg4::Engine::get_clock());
    r_.gil->unlock();
  }
  GilHold(const GilHold&) = delete;
  GilHold& operator=(const GilHold&) = delete;

 private:
  Rank& r_;
  double& held_s_;
  double acquired_s_ = 0.0;
};

// A dataset with its own speed curve: the host applies the machine's curve to every activity,
// so the load's work is scaled by machine / dataset speed at `busy_cores`. The caller passes the
// average over the worker's previous load, not the count at the instant it starts: a worker
// starts its next batch right after handing one off, when the pin thread has just woken up, so
// the instantaneous count is biased high (with one worker: 2 busy cores for a load that runs
// mostly alone, 13% too fast on the H200 profile, validation run 4).
double dataset_load_factor(const World& world, double busy_cores) {
  const auto& curve = world.scenario->dataset.load_speed_vs_busy_cores;
  if (curve.empty()) return 1.0;
  const double busy = std::clamp(busy_cores, 1.0, static_cast<double>(world.scenario->node.cpu_cores));
  return relative_core_speed(world.profile->cpu.speed_vs_busy_cores, busy) / relative_core_speed(curve, busy);
}

// The files `samples` samples open (samples / dataset.samples_per_file on average, cached or not): a metadata round
// trip each, paid serially by the opener, then the opens through the store's metadata server. No core is held.
void open_files(Rank& r, int samples) {
  const Scenario& s = *r.world->scenario;
  if (!s.storage.opens_cost()) return;
  const double opens = samples * s.opens_per_sample();
  if (s.storage.open_latency_s > 0.0) sg4::this_actor::sleep_for(opens * s.storage.open_latency_s);
  Store& store = *r.world->store;
  if (store.metadata != nullptr) sg4::this_actor::exec_init(opens)->set_host(store.metadata)->wait();
  const double now = sg4::Engine::get_clock();
  if (now >= r.world->window.start_s && now <= r.world->window.end_s) store.opens_in_window += opens;
  r.activities += 1;
}

// Storage reads of one batch's page-cache misses, after their files' opens (open_files): per-request latency paid
// serially by the reader, the bytes through the shared device (a request occupies it for at least 1/IOPS). Returns
// the CPU seconds the reading costs the reader beyond a warm read (the kernel filling the page cache).
double read_storage(Rank& r, int samples) {
  open_files(r, samples);
  const Scenario& s = *r.world->scenario;
  const double miss = 1.0 - s.storage.page_cache_hit_ratio;
  if (miss <= 0.0) return 0.0;
  const double requests = samples * miss;
  const double bytes = sum_of_draws(s.dataset.sample_bytes, samples, r.rng) * miss;
  const double device_bytes = std::max(bytes, requests * s.storage.read_bytes_per_s / s.storage.read_iops);
  if (s.storage.read_latency_s > 0.0) sg4::this_actor::sleep_for(requests * s.storage.read_latency_s);
  const double read_start_s = sg4::Engine::get_clock();
  Store& store = *r.world->store;
  const double readers_integral0 = store.readers.begin(read_start_s);
  const int readers = store.readers.count.now;
  sg4::this_actor::exec_init(device_bytes)->set_host(store.host)->wait();
  // One synchronous reader (one read in flight) cannot go faster than its own stream rate, however
  // idle the device: the read lasts at least bytes / that rate, which falls as more read at once
  // (calibrate's concurrent buffered reads; the count of readers at this read's start). With
  // device_share=follows_readers the storage host's sharing already gives each read that rate for the
  // count at each moment (configure_storage).
  if (s.storage.stream_read_bytes_per_s > 0.0 && s.storage.device_share == DeviceShare::kAtStart) {
    const double rate = stream_read_rate(s.storage.stream_read_bytes_per_s, s.storage.stream_read_vs_readers, readers);
    const double left_s = bytes / rate - (sg4::Engine::get_clock() - read_start_s);
    if (left_s > 0.0) sg4::this_actor::sleep_for(left_s);
  }
  const double now = sg4::Engine::get_clock();
  r.world->storage_wait_s += requests * s.storage.read_latency_s + (now - read_start_s);
  r.world->storage_files += requests;
  store.readers.end(read_start_s, readers_integral0, now);
  if (now >= r.world->window.start_s && now <= r.world->window.end_s) store.device_bytes += device_bytes;
  r.activities += 2;
  return bytes * s.storage.buffered_read_cpu_s_per_byte;
}

void note_outstanding(Rank& r, std::int64_t delta) {
  const double now = sg4::Engine::get_clock();
  r.outstanding_integral += r.outstanding * r.world->window.overlap(r.outstanding_last_s, now);
  r.outstanding_last_s = now;
  r.outstanding += delta;
  r.world->trace->counter(r.id, "batches_in_flight", now, static_cast<double>(r.outstanding));
}

// ---------------------------------------------------------------- actors

// One thread's core speed wander (profile cpu.core_speed_cv, core_speed_correlation_s): a deviation
// (x > 0: a slow spell) drawn from the stationary distribution, moved on at each piece of work's start.
// The machine's cores wander whichever thread runs on them: the workers, the pin thread and the main thread
// each have one (validation run 15, finding 7). With cpu.core_speed_slow_cv a second, slower part of its own
// moves beside it and their factors multiply (no draws for it otherwise: one-part runs are unchanged).
class CoreWander {
 public:
  // per_batch: a worker's wander, called once a batch, whose parts may count batches (cpu.core_speed_correlation_batches)
  // shared: the worker's rank, whose one process carries cpu.core_speed_common_share of the workers' wander (workers
  // only: the pin and main threads pass none and keep their whole wander)
  CoreWander(const CpuProfile& cpu, Rng& rng, bool per_batch = false, Rank* shared = nullptr)
      : own_(shared ? 1.0 - cpu.core_speed_common_share : 1.0),
        fast_(part_cv(thread_cv(cpu, rng), own_), cpu.core_speed_correlation_s, rng,
              cpu.core_speed_fast_side * std::sqrt(own_), cpu.core_speed_slow_side * std::sqrt(own_),
              per_batch ? cpu.core_speed_correlation_batches : 0.0),
        slow_(part_cv(cpu.core_speed_slow_cv, own_), cpu.core_speed_slow_correlation_s, rng, 0.0, 0.0,
              per_batch ? cpu.core_speed_slow_correlation_batches : 0.0),
        shared_(shared && cpu.core_speed_common_share > 0.0 && (cpu.core_speed_cv > 0.0 || cpu.core_speed_slow_cv > 0.0)
                    ? shared
                    : nullptr),
        // the shared part's size from the parts' cvs (with a split normal first part, from its core_speed_cv)
        common_cv_(part_cv(std::sqrt(std::expm1(std::log1p(cpu.core_speed_cv * cpu.core_speed_cv) +
                                                std::log1p(cpu.core_speed_slow_cv * cpu.core_speed_slow_cv))),
                           cpu.core_speed_common_share)),
        common_tau_s_(cpu.core_speed_slow_cv > 0.0 ? cpu.core_speed_slow_correlation_s : cpu.core_speed_correlation_s),
        common_tau_batches_(per_batch ? (cpu.core_speed_slow_cv > 0.0 ? cpu.core_speed_slow_correlation_batches
                                                                       : cpu.core_speed_correlation_batches)
                                      : 0.0) {}
  // The factor on a piece of work's CPU seconds starting now.
  double time_factor(Rng& rng) {
    if (!fast_.on() && !slow_.on() && !shared_) return 1.0;  // steady cores: no clock read on every piece of work
    const double now = sg4::Engine::get_clock();
    return fast_.time_factor(now, rng) * slow_.time_factor(now, rng) * common_factor(now, rng);
  }

 private:
  // One Ornstein-Uhlenbeck part: lognormal of spread cv, or (cpu.core_speed_fast_side / slow_side both set) a split
  // normal in log speed of those sides, whose state x is then the standard normal z (split_wander_time_factor).
  class Part {
   public:
    Part(double cv, double tau_s, Rng& rng, double fast_side = 0.0, double slow_side = 0.0, double tau_batches = 0.0)
        : shaped_(fast_side > 0.0 && slow_side > 0.0), cv_(cv), tau_s_(tau_s), tau_batches_(tau_batches),
          sigma_ln_(shaped_ ? 1.0 : lognormal_sigma(cv)), sigma_fast_(fast_side / kNormalP90),
          sigma_slow_(slow_side / kNormalP90),
          split_mean_exp_(shaped_ ? split_wander_mean_exp(sigma_fast_, sigma_slow_) : 1.0),
          x_(on() ? sigma_ln_ * rng.standard_normal() : 0.0), at_s_(sg4::Engine::get_clock()) {}
    bool on() const { return shaped_ || cv_ > 0.0; }
    double time_factor(double now, Rng& rng) {
      if (!on()) return 1.0;
      // counted in batches: one step per call (a worker calls once a batch); else by the seconds since the last call
      x_ = tau_batches_ > 0.0 ? wander_log_speed(x_, 1.0, tau_batches_, sigma_ln_, rng.standard_normal())
                              : wander_log_speed(x_, now - at_s_, tau_s_, sigma_ln_, rng.standard_normal());
      at_s_ = now;
      return shaped_ ? split_wander_time_factor(x_, sigma_fast_, sigma_slow_, split_mean_exp_)
                     : wander_time_factor(x_, cv_);
    }

   private:
    bool shaped_;
    double cv_, tau_s_, tau_batches_, sigma_ln_, sigma_fast_, sigma_slow_, split_mean_exp_, x_, at_s_;
  };
  // This thread's cv of the first part: the profile's, or with cpu.core_speed_cv_spread one lognormal draw around it
  // (mean kept; no draw without a spread, so runs without it are unchanged)
  static double thread_cv(const CpuProfile& cpu, Rng& rng) {
    const double s = cpu.core_speed_cv_spread;
    if (s <= 0.0 || cpu.core_speed_cv <= 0.0) return cpu.core_speed_cv;
    return cpu.core_speed_cv * std::exp(s * rng.standard_normal() - 0.5 * s * s);
  }
  // The cv of a lognormal keeping `share` of the log variance of one of spread cv.
  static double part_cv(double cv, double share) {
    return share >= 1.0 ? cv : std::sqrt(std::expm1(share * std::log1p(cv * cv)));
  }
  // The rank's shared part, moved on by whichever worker starts a batch: by the seconds since it last moved, or
  // counted in batches a round at a time (each worker's call 1 / num_workers of a batch), so the workers' k-th
  // batches of a round robin see about the same value either way.
  double common_factor(double now, Rng& rng) {
    if (!shared_) return 1.0;
    Rank& r = *shared_;
    const double sigma = lognormal_sigma(common_cv_);
    if (!r.common_wander_drawn) {
      r.common_wander_x = sigma * rng.standard_normal();
      r.common_wander_drawn = true;
    } else if (common_tau_batches_ > 0.0) {
      const double round = 1.0 / std::max<std::size_t>(1, r.worker_tasks.size());
      r.common_wander_x = wander_log_speed(r.common_wander_x, round, common_tau_batches_, sigma, rng.standard_normal());
    } else {
      r.common_wander_x =
          wander_log_speed(r.common_wander_x, now - r.common_wander_at_s, common_tau_s_, sigma, rng.standard_normal());
    }
    r.common_wander_at_s = now;
    return wander_time_factor(r.common_wander_x, common_cv_);
  }
  double own_;
  Part fast_, slow_;
  Rank* shared_;
  double common_cv_, common_tau_s_, common_tau_batches_;
};

// loader.slow_worker's extra time on a batch, after its collate (where the harness's straggler spins): CPU work on
// the worker's core. With holds_gil the worker's process runs Python with its GIL all the while, so the pin thread's
// receive of this worker's previous batch (its fd sharer thread serves the storage with the GIL) waits for the end:
// run 54's factor-2 straggler, receives that began during the spin ended 5.5 ms after it (median of 72), up to 81 ms
// long, against 9.2 ms for those that began outside it (validation run 55).
void straggler_extra(Rank& r, int w, double core_s, std::int64_t batch) {
  World& world = *r.world;
  const bool holds_gil = world.scenario->loader.slow_worker_holds_gil;
  if (holds_gil) r.slow_worker_gil->lock();
  const double t0 = sg4::Engine::get_clock();
  run_cpu(r, core_s);
  const double t1 = sg4::Engine::get_clock();
  if (holds_gil) r.slow_worker_gil->unlock();
  r.worker_busy_s += world.window.overlap(t0, t1);
  world.trace->span(r.id, kWorkerTrack0 + w, holds_gil ? "straggler's extra (holds its GIL)" : "straggler's extra", t0,
                    t1, batch);
}

// When a batch reached the pin thread or the loop (the out-of-order share reads it)
void note_batch_done(Rank& r, std::int64_t batch, double done_s) {
  if (batch < 0) return;
  const auto index = static_cast<std::size_t>(batch);
  if (index >= r.batch_done_s.size()) r.batch_done_s.resize(index + 1, -1.0);
  r.batch_done_s[index] = done_s;
}

// Part of a worker loop's own CPU after a batch's hand-off, on the worker's core, traced and counted busy
void run_worker_loop_cpu(Rank& r, int w, double core_s, const char* span, std::int64_t batch) {
  if (core_s <= 0.0) return;
  const double a0 = sg4::Engine::get_clock();
  run_cpu(r, core_s);
  const double a1 = sg4::Engine::get_clock();
  r.world->trace->span(r.id, kWorkerTrack0 + w, span, a0, a1, batch);
  r.worker_busy_s += r.world->window.overlap(a0, a1);
}

// A worker's queue feeder thread (loader.worker_turnaround_share below 1): runs each batch's put (pickling it into
// shared memory and sending it) on a core beside its worker and hands it off, in its worker's order, when that ends.
// Its core time counts among the busy cores as the workers' does: where the workers fill the machine the put takes
// a core from them, as the real feeder thread does (validation-runs.md run 81, finding 2).
void feeder_actor(Rank& r, int w) {
  Fifo<Feed>& feeds = *r.worker_feeds[w];
  for (;;) {
    Feed f = feeds.pop();
    run_cpu(r, f.put_core_s);
    const double handed_s = sg4::Engine::get_clock();
    if (handed_s > f.put_start_s)
      r.world->trace->span(r.id, kFeederTrack0 + w, kPutSpan, f.put_start_s, handed_s, f.batch.batch);
    note_batch_done(r, f.batch.batch, handed_s);
    r.arrivals.push(f.batch);
  }
}

void worker_actor(Rank& r, int w) {
  World& world = *r.world;
  const Scenario& s = *world.scenario;
  Fifo<Task>& tasks = *r.worker_tasks[w];
  double busy_cores_last_load = -1.0;  // average busy cores over this worker's previous load
  CoreWander wander(world.profile->cpu, r.rng, /*per_batch=*/true, &r);  // moved on at each batch start
  std::size_t replayed = 0;                       // batches played back (loader.replay_worker_batches)
  const double replay_mean_s = s.loader.replay_mean_batch_s(w);
  const bool reads_per_sample = s.storage.worker_reads == WorkerReads::kPerSample &&
                                (s.storage.page_cache_hit_ratio < 1.0 || s.storage.opens_cost());
  const double turnaround_share = s.loader.worker_turnaround_share;
  const bool put_beside = s.loader.put_beside_worker();
  for (;;) {
    Task t = tasks.pop();
    // loader.slow_worker stretches the batch's data work (its reads' CPU, loads and collate), not the worker loop's
    // own per-batch Python (the index's receive, the put: worker_s_per_batch), as the harness's straggler spins
    // (factor - 1) x its __getitem__ and collate time (validation run 55)
    const double slow_factor = w == s.loader.slow_worker ? s.loader.slow_worker_factor : 1.0;
    // a factor below 1 (a faster worker) scales the data work itself; one above 1 adds straggler_extra after it
    const double data_factor = std::min(slow_factor, 1.0);
    const double collate_cpu_s = worker_collate_s(s, *world.profile, t.shape.bytes);
    const int samples = t.shape.samples;
    const double worker_loop_cpu_s = s.loader.worker_s_per_batch;
    // the put (before the hand-off) and the rest of the worker loop's own CPU (after it: loader.worker_put_share)
    const double put_cpu_s = worker_loop_cpu_s * s.loader.worker_put_share;
    const double after_cpu_s = worker_loop_cpu_s - put_cpu_s;
    double after_handoff_s = 0.0;  // the worker's core seconds to run once its batch is handed off
    double key_s = 0.0;            // the whole worker loop's own CPU at this batch's pace (put_beside)
    double t1 = 0.0;
    if (w < static_cast<int>(s.loader.replay_batch_s.size()) && !s.loader.replay_batch_s[w].empty()) {
      // a measured batch time played back (loader.replay_worker_batches): its wall as is, on the worker's core
      const auto& times = s.loader.replay_batch_s[w];
      const double t0 = sg4::Engine::get_clock();
      // past the list the worker plays it again: counted, since a few seconds' batches looped over a longer run
      // stand for a speed the worker held only that long (validation run 60, finding 1)
      if (replayed >= times.size()) ++r.replay_wrapped_batches;
      const double batch_s = times[replayed % times.size()];
      run_cpu(r, batch_s);
      ++replayed;
      const double collate_end_s = sg4::Engine::get_clock();
      world.trace->span(r.id, kWorkerTrack0 + w, "load+collate (replayed)", t0, collate_end_s, t.batch);
      // The measured time ends at collate; the worker loop's own Python (the put's pickling and send) follows, at
      // this batch's pace (its time over the worker's mean), as the time factor scales both elsewhere. Without it the
      // batches reached the pin thread in collate order, where the cases' timelines show a batch that collated up to
      // about 1 ms before the next reaching it after that one, the slower worker's put later (validation-runs.md,
      // "The put's pace").
      key_s = worker_loop_cpu_s * batch_s / replay_mean_s;
      if (worker_loop_cpu_s > 0.0 && !put_beside) {
        run_cpu(r, put_cpu_s * batch_s / replay_mean_s);
        world.trace->span(r.id, kWorkerTrack0 + w, kPutSpan, collate_end_s, sg4::Engine::get_clock(), t.batch);
        after_handoff_s = after_cpu_s * batch_s / replay_mean_s;
      }
      t1 = sg4::Engine::get_clock();
      r.worker_busy_s += world.window.overlap(t0, t1);
    } else if (reads_per_sample) {
      // reads alternating with their CPU, as PyTorch's fetch calls __getitem__ one index at a time (in
      // read_pieces_per_batch runs of samples): the worker is a reader only while it reads, so the device's share
      // follows how many workers read at that moment
      const double busy_now = busy_cores_last_load > 0.0 ? busy_cores_last_load : world.cpu_running.now + 1.0;
      const double load_factor = dataset_load_factor(world, busy_now);
      const double speed_factor = data_factor * wander.time_factor(r.rng);
      const double start_s = sg4::Engine::get_clock();
      const double getitem_integral0 = world.workers_in_getitem.begin(start_s);
      double cpu_wall_s = 0.0, busy_integral = 0.0, data_core_s = 0.0;
      auto cpu_piece = [&](double core_s) {
        const double c0 = sg4::Engine::get_clock();
        const double integral0 = world.cpu_running.integral_at(c0);
        run_cpu(r, core_s * speed_factor);
        const double c1 = sg4::Engine::get_clock();
        cpu_wall_s += c1 - c0;
        busy_integral += world.cpu_running.integral_at(c1) - integral0;
        r.worker_busy_s += world.window.overlap(c0, c1);
      };
      // beyond storage.read_pieces_per_batch samples (4 by default; 64 reads the table's 64-sample batches one
      // sample at a time), runs of consecutive samples share one read and one CPU piece, so a batch costs a bounded
      // number of events
      const int pieces = std::min(samples, s.storage.read_pieces_per_batch);
      for (int i = 0; i < pieces; ++i) {
        const int n = samples / pieces + (i < samples % pieces ? 1 : 0);
        const double read_start_s = sg4::Engine::get_clock();
        const double read_cpu_s = read_storage(r, n);
        r.worker_storage_wait_s += world.window.overlap(read_start_s, sg4::Engine::get_clock());
        const double load_core_s =
            (sum_of_draws(s.dataset.load_s_per_sample, n, r.rng) + tokenize_s(s, t.shape) * n / samples) * load_factor +
            read_cpu_s;
        data_core_s += load_core_s;
        cpu_piece(load_core_s);
      }
      const double collate_start_s = sg4::Engine::get_clock();
      world.workers_in_getitem.end(start_s, getitem_integral0, collate_start_s);
      world.trace->span(r.id, kWorkerTrack0 + w, "read+load (per sample)", start_s, collate_start_s, t.batch);
      cpu_piece(collate_cpu_s);
      data_core_s += collate_cpu_s;
      const double collate_end_s = sg4::Engine::get_clock();
      world.trace->span(r.id, kWorkerTrack0 + w, "collate", collate_start_s, collate_end_s, t.batch);
      if (slow_factor > 1.0) straggler_extra(r, w, (slow_factor - 1.0) * data_core_s * speed_factor, t.batch);
      const double put_start_s = sg4::Engine::get_clock();
      key_s = worker_loop_cpu_s * speed_factor / data_factor;  // the loop's own Python is not the factor's
      if (!put_beside) {
        cpu_piece(put_cpu_s / data_factor);
        after_handoff_s = after_cpu_s * speed_factor / data_factor;
      }
      t1 = sg4::Engine::get_clock();
      if (t1 > put_start_s) world.trace->span(r.id, kWorkerTrack0 + w, kPutSpan, put_start_s, t1, t.batch);
      if (cpu_wall_s > 0.0) busy_cores_last_load = busy_integral / cpu_wall_s;
    } else {
      const double read_start_s = sg4::Engine::get_clock();
      const double read_cpu_s = read_storage(r, samples);
      const double t0 = sg4::Engine::get_clock();  // busy = CPU work; reads count for storage
      r.worker_storage_wait_s += world.window.overlap(read_start_s, t0);
      if (t0 > read_start_s) world.trace->span(r.id, kWorkerTrack0 + w, "read", read_start_s, t0, t.batch);
      const double busy_now = busy_cores_last_load > 0.0 ? busy_cores_last_load : world.cpu_running.now + 1.0;
      const double data_core_s =
          (sum_of_draws(s.dataset.load_s_per_sample, samples, r.rng) + tokenize_s(s, t.shape)) *
              dataset_load_factor(world, busy_now) +
          read_cpu_s + collate_cpu_s;
      const double time_factor = wander.time_factor(r.rng);
      const double integral0 = world.cpu_running.integral_at(t0);
      run_cpu(r, data_core_s * data_factor * time_factor);
      const double collate_end_s = sg4::Engine::get_clock();
      world.trace->span(r.id, kWorkerTrack0 + w, "load+collate", t0, collate_end_s, t.batch);
      // the worker loop's own Python after the collate (the put: the batch reaches the pin thread or the loop when it
      // ends), at the same pace: a slower worker's batch puts later (validation-runs.md, "The put's pace").
      // A straggler's extra follows it here, where the per-sample path above and the harness's spin (inside its
      // collate) put it before: moved before the put, the straggler families' throughput scores 1-1.5 points worse
      // and recommend's run 54 straggler names num_workers=16 over in_order=False (eighty-third session), so the
      // order stays as calibrated until a straggler call with the pin thread's own order (pin_received) says which.
      key_s = worker_loop_cpu_s * time_factor;
      if (!put_beside) {
        run_cpu(r, put_cpu_s * time_factor);
        after_handoff_s = after_cpu_s * time_factor;
      }
      const double data_end_s = sg4::Engine::get_clock();
      if (data_end_s > collate_end_s)
        world.trace->span(r.id, kWorkerTrack0 + w, kPutSpan, collate_end_s, data_end_s, t.batch);
      if (data_end_s > t0) busy_cores_last_load = (world.cpu_running.integral_at(data_end_s) - integral0) / (data_end_s - t0);
      r.worker_busy_s += world.window.overlap(t0, data_end_s);
      if (slow_factor > 1.0) straggler_extra(r, w, (slow_factor - 1.0) * data_core_s * time_factor, t.batch);
      t1 = sg4::Engine::get_clock();
    }
    if (put_beside) {
      // the feeder hands the batch off the put after its collate; the worker turns round and takes its next index
      r.worker_feeds[w]->push(Feed{Batch{t.batch, t.shape, t.sent_s, w}, t1, key_s * s.loader.worker_put_share});
      run_worker_loop_cpu(r, w, key_s * turnaround_share, kTurnaroundSpan, t.batch);
      continue;  // the put is the feeder's, on a core beside the worker
    }
    note_batch_done(r, t.batch, t1);
    r.arrivals.push(Batch{t.batch, t.shape, t.sent_s, w});
    // the worker loop's CPU after the hand-off (loader.worker_put_share below 1): on the worker's core before its
    // next batch, so the worker's pace is the same and only the hand-off comes earlier
    run_worker_loop_cpu(r, w, after_handoff_s, kAfterHandoffSpan, t.batch);
  }
}

// Runs `work` on the pin thread holding the GIL. While the loop runs Python with the GIL it still drops it at every
// op it calls (PyTorch's bindings release it around each one), so the pin thread takes it at the loop's next op,
// microseconds away, and the loop waits for it instead: its piece is suspended, the wait drawn as `loop_wait`.
// Outside the loop's Python the pin thread waits for the GIL as any thread. Validation run 38 (finding 6): with the
// loop's whole piece held, the pin-bound cases' errors fell one for one with the pin thread's simulated wait for the
// GIL (within calls, slope -1.02 over 340 cases), and the pin thread off its core in the cases (3.9% of the wall) was
// no more than in the probes with no loop beside it (4.6%).
template <class Work>
void pin_thread_with_gil(Rank& r, std::int64_t batch, const char* loop_wait, Work&& work) {
  World& world = *r.world;
  if (!r.main_python || r.main_python->get_state() != sg4::Activity::State::STARTED) {
    GilHold gil(r, kPinTrack, r.gil_wait_pin_s, r.gil_held_pin_s, batch);
    work();
    return;
  }
  const sg4::ExecPtr loop = r.main_python;
  const double g0 = sg4::Engine::get_clock();
  loop->suspend();
  if (!r.synthetic) world.cpu_running.add(-1, g0);
  work();
  const double g1 = sg4::Engine::get_clock();
  if (!r.synthetic) world.cpu_running.add(+1, g1);
  loop->resume();
  const double window_held_s = world.window.overlap(g0, g1);
  r.gil_held_pin_s += window_held_s;
  r.gil_wait_main_s += window_held_s;
  r.gil_held_main_s -= window_held_s;  // the loop's GilHold counts its whole piece as held
  if (!r.synthetic) world.trace->span(r.id, kMainTrack, loop_wait, g0, g1, batch);
}

// The pin thread's receive of one batch (unpickling: the fd receive, the mmap). ipc.receive_gil_s_per_batch /
// receive_gil_share: only `held_s` of it holds the GIL, and it runs first; the rest (free_s) then runs beside the
// loop (validation-runs.md run 62, finding 9: the loop's ops right after the hand-off lose the time, those it runs a
// batch later do not).
void receive_with_gil(Rank& r, double held_s, double free_s, std::int64_t batch) {
  if (held_s > 0.0)
    pin_thread_with_gil(r, batch, "wait for the GIL (the pin thread's receive)", [&] { run_cpu(r, held_s); });
  if (free_s > 0.0) run_cpu(r, free_s);
}

// The pin thread's work on the worker's mapping, holding the process's memory map, which the loop's host work keeps
// needing (run 17 measured the loop slowed by it, not by the copy of the same bytes from private memory).
void on_worker_mapping(Rank& r, double core_s, std::int64_t batch, const char* what) {
  World& world = *r.world;
  const double m0 = sg4::Engine::get_clock();
  r.memory_map->lock();
  r.memory_map_busy = true;
  run_cpu(r, core_s);
  r.memory_map_busy = false;
  r.memory_map->unlock();
  r.memory_map_releases.add();
  const double m1 = sg4::Engine::get_clock();
  r.memory_map_held_pin_s += world.window.overlap(m0, m1);
  world.trace->span(r.id, kPinTrack, what, m0, m1, batch);
}

// The pin thread's wander: the cores' (the workers'), or its own measured spread (cpu.pin_thread_speed_cv) as the
// first part's cv, without the per-thread spread or split-normal sides that describe the workers.
CpuProfile pin_thread_cpu(const CpuProfile& cpu) {
  if (!cpu.pin_thread_speed_cv) return cpu;
  CpuProfile own = cpu;
  own.core_speed_cv = *cpu.pin_thread_speed_cv;
  own.core_speed_cv_spread = 0.0;
  own.core_speed_fast_side = 0.0;
  own.core_speed_slow_side = 0.0;
  return own;
}

void pin_thread_actor(Rank& r) {
  World& world = *r.world;
  const Scenario& s = *world.scenario;
  CoreWander wander(pin_thread_cpu(world.profile->cpu), r.rng);  // moved on at each batch
  for (;;) {
    Batch b = r.arrivals.pop();
    const double t0 = sg4::Engine::get_clock();
    const double speed_factor = wander.time_factor(r.rng);
    // before the fd hand-off's time off the core below: the sharer serves the fd once it has the GIL
    if (b.worker == s.loader.slow_worker && s.loader.slow_worker_holds_gil) {
      // the straggler's fd sharer needs its GIL: wait out its extra time if it is in it (straggler_extra)
      const double g0 = sg4::Engine::get_clock();
      r.slow_worker_gil->lock();
      r.slow_worker_gil->unlock();
      const double g1 = sg4::Engine::get_clock();
      if (g1 > g0)
        world.trace->span(r.id, kPinTrack, "receive: the straggler's GIL (its fd sharer)", g0, g1, b.batch);
    }
    if (s.loader.pin_thread_wait_s_per_batch > 0.0) {
      // off the core inside the receive (the worker's fd hand-off, kernel waits): the thread is occupied but
      // holds no core, no GIL and no memory map
      const double w0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(s.loader.pin_thread_wait_s_per_batch);
      world.trace->span(r.id, kPinTrack, "receive: off the core (fd hand-off)", w0, sg4::Engine::get_clock(), b.batch);
    }
    // a measured GIL hold beyond the fixed receive (a call whose receive_s_per_batch came out small) is work the
    // per-byte part was charged with: it leaves that part, so the pin thread's cycle stays the measured one
    const double bytes = b.shape.bytes;
    const PinReceiveParts parts = pin_receive_parts(*world.profile, bytes);
    receive_with_gil(r, parts.held_s * speed_factor, parts.free_s * speed_factor, b.batch);
    // The copy into pinned memory touches the mapped pages (the per-byte receive cost) and runs in C++ with the
    // GIL released. The work on the worker's mapping holds the process's memory map; the copy itself holds nothing.
    // Freeing the worker's batch after the copy (munmap + close) holds the GIL as well, before the hand-off
    // (parts.release_s, ipc.release_holds_gil: validation run 72, finding 5; PyTorch's THPVariable_clear releases
    // it around a tensor's destruction, pytorch#83623, but the loop's .item() waited out this release on the H100
    // host: validation run 74 found why, the shared storage's own Python object frees and unmaps it with the GIL
    // held, 0.74-0.99 of the free's wall, where a private tensor's free releases it; release_gil_probe.py).
    // Without it the release stays in the work before the copy (parts.map_s), beside the loop.
    on_worker_mapping(r, parts.map_s * speed_factor, b.batch,
                      parts.release_s > 0.0 ? "map, touch (holds the memory map)"
                                            : "map, touch, unmap (holds the memory map)");
    run_cpu(r, pin_copy_s(*world.profile, bytes) * speed_factor);
    if (parts.release_s > 0.0)
      pin_thread_with_gil(r, b.batch, "wait for the GIL (the pin thread's release of a worker's batch)", [&] {
        on_worker_mapping(r, parts.release_s * speed_factor, b.batch, "release the worker's batch (holds the GIL)");
      });
    const double t1 = sg4::Engine::get_clock();
    r.pin_busy_s += world.window.overlap(t0, t1);
    world.trace->span(r.id, kPinTrack, "pin_memory", t0, t1, b.batch);
    r.pinned_bytes += bytes;
    world.trace->counter(r.id, "pinned_bytes", t1, r.pinned_bytes);
    r.pinned.push(b);
  }
}

void record_step_end(Rank& r, std::int64_t step) {
  World& world = *r.world;
  const double now = sg4::Engine::get_clock();
  r.step_end_s[step] = now;
  auto& count = r.synthetic ? world.baseline_step_done_count : world.step_done_count;
  auto& node_end = r.synthetic ? world.baseline_step_end_s : world.node_step_end_s;
  Window& window = r.synthetic ? world.baseline_window : world.window;
  if (++count[step] == world.gpus()) {
    node_end[step] = now;
    // the busy-cores integral counts the real ranks only, so only their window reads it
    if (step + 1 == world.warmup) {
      window.start_s = now;
      if (!r.synthetic) world.cpu_integral_window_start = world.cpu_running.integral_at(now);
    }
    if (step + 1 == world.steps) {
      window.end_s = now;
      if (!r.synthetic) world.cpu_integral_window_end = world.cpu_running.integral_at(now);
    }
  }
}

// Attributes the compute stream's idle gap before step `step` to what the GPU waited for.
void attribute_gap(Rank& r, std::int64_t step, double gap_start_s, double gap_end_s) {
  const Window& window = r.world->window;
  if (r.synthetic || gap_end_s <= gap_start_s || gap_start_s < window.start_s || gap_end_s > window.end_s) return;
  auto overlap = [&](double a, double b) { return std::max(0.0, std::min(b, gap_end_s) - std::max(a, gap_start_s)); };
  const double data = overlap(r.data_wait_start_s[step], r.data_wait_end_s[step]);
  const double copy = overlap(r.copy_start_s[step], r.copy_end_s[step]);
  r.idle_data_s += data;
  r.idle_copy_s += copy;
  r.idle_host_s += std::max(0.0, gap_end_s - gap_start_s - data - copy);
}

// One step's forward and backward under FSDP, unit by unit (models/fsdp.hpp): each unit waits for its all-gather, and
// its compute runs slower while a collective runs beside it (compute.gemm_kept_with_nccl); forward all-gathers are
// issued all_gathers_in_flight units ahead, backward ones by backward_prefetch, a unit's reduce-scatter after its
// backward; the optimizer waits for the last reduce-scatter. Returns the time the compute stream waited for
// collectives (exposed communication).
// A rank's wait at a collective after its own part is in: the collectives' own time in it, and the rest, when NCCL's
// stream stood idle for another rank's part (a straggler: a longer batch, a slower loader).
struct CollectiveWait {
  double comm_s = 0.0, other_ranks_s = 0.0;
  double total_s() const { return comm_s + other_ranks_s; }
};

// Splits a wait from `from_s` to now: `running` counts the collectives that ran meanwhile.
CollectiveWait split_wait(const CountOverTime& running, double integral_at_from, double from_s) {
  const double now_s = sg4::Engine::get_clock();
  const double comm_s = std::clamp(running.integral_at(now_s) - integral_at_from, 0.0, now_s - from_s);
  return {comm_s, now_s - from_s - comm_s};
}

CollectiveWait fsdp_step(Rank& r, std::int64_t step, double forward_s, double backward_s) {
  World& world = *r.world;
  const Scenario& s = *world.scenario;
  FsdpComm& f = *r.fsdp;
  const FsdpConfig& cfg = s.fsdp;
  const int units = static_cast<int>(cfg.unit_parameter_bytes.size());
  const std::int64_t base = step * static_cast<std::int64_t>(f.ops.size());
  const double kept = world.profile->compute.gemm_kept_with_nccl;
  CollectiveWait exposed;
  auto issue = [&]() { r.fsdp_issued.add(); };  // the ops go out in fsdp_step_ops's order, on every rank alike
  auto wait_for = [&](int op) {
    const double t0 = sg4::Engine::get_clock(), ran_at_t0 = f.running.integral_at(t0);
    f.done.wait_at_least(base + op + 1);
    const CollectiveWait w = split_wait(f.running, ran_at_t0, t0);
    exposed.comm_s += w.comm_s;
    exposed.other_ranks_s += w.other_ranks_s;
  };
  auto compute = [&](double work_s) {
    sg4::this_actor::sleep_for(compute_beside_comm_s(work_s, f.busy_until_s - sg4::Engine::get_clock(), kept));
  };
  const int ahead = std::min(units, cfg.all_gathers_in_flight);
  for (int u = 0; u < ahead; ++u) issue();
  for (int u = 0; u < units; ++u) {
    wait_for(f.forward_gather[u]);
    compute(forward_s * cfg.unit_parameter_bytes[u] / f.total_parameter_bytes);
    if (u + ahead < units) issue();
  }
  const bool regather = cfg.reshard_after_forward;
  if (regather) issue();  // the last unit's all-gather for backward
  for (int u = units - 1; u >= 0; --u) {
    const bool next = regather && u > 0;
    if (next && cfg.backward_prefetch == FsdpBackwardPrefetch::kBackwardPre) issue();
    if (regather && u < units - 1 && cfg.backward_prefetch == FsdpBackwardPrefetch::kNone) issue();  // its own, now
    if (regather) wait_for(f.backward_gather[u]);
    compute(backward_s * cfg.unit_parameter_bytes[u] / f.total_parameter_bytes);
    if (next && cfg.backward_prefetch == FsdpBackwardPrefetch::kBackwardPost) issue();
    issue();  // the unit's reduce-scatter
  }
  wait_for(static_cast<int>(f.ops.size()) - 1);  // the optimizer needs every gradient shard
  r.activities += static_cast<std::int64_t>(f.ops.size());
  return exposed;
}

void compute_stream_actor(Rank& r) {
  World& world = *r.world;
  const Scenario& s = *world.scenario;
  const Profile& p = *world.profile;
  Window& window = r.synthetic ? world.baseline_window : world.window;
  const int track = kComputeTrack;
  double previous_end_s = 0.0;
  double busy_share = 0.0, busy_share_at_s = 0.0;  // the GPU's recent duty (a rested GPU at start)
  const bool duty_curve = !s.training.step_s_vs_gpu_duty.empty();
  // the clock's humps' amplitude at the duty curve's busy share where there is a curve (averaged over one of their
  // periods it passed the humps' band during a rested start and widened steps a flat loop at 0.98 never shows:
  // validation-runs.md run 45, finding 2), else at the share averaged over one period
  const GpuClockHumps& humps = s.training.gpu_clock_humps;
  const bool own_hump_share = humps.enabled() && !duty_curve;
  double hump_share = 0.0, hump_share_at_s = 0.0;
  for (;;) {
    StreamOp op = r.compute.queue.pop();
    if (op.kind == StreamOp::Kind::kCopy) {  // default-stream copy: serialized with kernels
      const double t0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(op.duration_s);
      const double t1 = sg4::Engine::get_clock();
      r.copy_start_s[op.step] = t0;
      r.copy_end_s[op.step] = t1;
      r.copy_busy_s += window.overlap(t0, t1);
      world.trace->span(r.id, track, "Memcpy HtoD", t0, t1, op.step);
      ++r.activities;
      r.compute.completed_ops.add();
      continue;
    }
    if (op.wait_side_ops > 0) r.side.completed_ops.wait_at_least(op.wait_side_ops);
    const double start_s = sg4::Engine::get_clock();
    attribute_gap(r, op.step, previous_end_s, start_s);
    if (duty_curve) {
      // the step's time at the GPU's duty so far; its own draw (step_cv) kept as a ratio
      busy_share = gpu_busy_share_after(busy_share, start_s - busy_share_at_s, false, s.training.gpu_duty_time_constant_s);
      op.duration_s *= s.training.step_s_at_duty(busy_share) / s.training.step_s();
    }
    if (humps.enabled()) {
      if (own_hump_share) hump_share = gpu_busy_share_after(hump_share, start_s - hump_share_at_s, false, humps.period_s);
      op.duration_s *= clock_hump_factor(start_s, humps.amplitude_at(own_hump_share ? hump_share : busy_share),
                                         humps.period_s, humps.high_share);
    }
    if (op.decode_s > 0.0) {
      // the loop's decode_jpeg(device="cuda") on the compute stream ahead of the step (training.gpu_decode_s_per_sample)
      const double d0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(op.decode_s);
      if (!r.synthetic) world.trace->span(r.id, track, "decode_jpeg (nvJPEG)", d0, sg4::Engine::get_clock(), op.step);
    }
    // the GPU's recent duty after kernels ran from start_s to end_s (the duty curve's and the clock humps' shares)
    auto note_busy = [&](double end_s) {
      if (duty_curve) {
        busy_share = gpu_busy_share_after(busy_share, end_s - start_s, true, s.training.gpu_duty_time_constant_s);
        busy_share_at_s = end_s;
      }
      if (own_hump_share) {
        hump_share = gpu_busy_share_after(hump_share, end_s - start_s, true, humps.period_s);
        hump_share_at_s = end_s;
      }
    };
    if (op.first_part) {
      // a new shape's kernels launched before its last plan is built: they run while the plans build; the step
      // ends with its second part
      sg4::this_actor::sleep_for(op.duration_s);
      const double end_s = sg4::Engine::get_clock();
      note_busy(end_s);
      if (!r.synthetic) {
        r.compute_busy_s += window.overlap(start_s, end_s);
        world.trace->span(r.id, track, "kernels launched before the new shape's last plan", start_s, end_s, op.step);
      }
      ++r.activities;
      previous_end_s = end_s;
      r.compute.completed_ops.add();
      continue;
    }
    const double forward_share = s.training.forward_s / s.training.step_s();
    const double forward_s = op.duration_s * forward_share;
    const double backward_s = op.duration_s - forward_s;
    CollectiveWait exposed;
    double launch_waits_in_window_s = 0.0;  // the GPU idle between pieces of a step, waiting for their launches
    double backward_end_s = -1.0;  // DDP: where the rank's backward ended and its wait for the all-reduce began
    if (r.fsdp) {
      exposed = fsdp_step(r, op.step, forward_s, backward_s);  // unit by unit beside FSDP's collectives
    } else if (r.comm && !r.comm->bucket_bytes.empty()) {
      sg4::this_actor::sleep_for(forward_s);
      // Backward produces gradients at a steady rate; each bucket's all-reduce launches when
      // it fills, and runs beside the rest of backward, which NCCL's kernels slow.
      const auto& buckets = r.comm->bucket_bytes;
      const std::int64_t nb = static_cast<std::int64_t>(buckets.size());
      for (std::int64_t k = 0; k < nb; ++k) {
        const double segment_s = backward_s * buckets[k] / r.comm->total_bytes / (k == 0 ? 1.0 : p.compute.gemm_kept_with_nccl);
        sg4::this_actor::sleep_for(segment_s);
        r.comm->buckets_ready.add();
      }
      const double wait_from_s = sg4::Engine::get_clock(), ran_at_from = r.comm->running.integral_at(wait_from_s);
      backward_end_s = wait_from_s;
      r.comm->buckets_done.wait_at_least((op.step + 1) * nb);
      exposed = split_wait(r.comm->running, ran_at_from, wait_from_s);
      r.activities += nb;
    } else if (op.launch_pieces > 1) {
      // the kernels follow the launches: a stall inside them (the GIL held by the pin thread, the memory map) idles
      // a GPU that has less than the stall queued
      for (int i = 0; i < op.launch_pieces; ++i) {
        if (i > 0) {
          const double w0 = sg4::Engine::get_clock();
          r.launched_pieces.wait_at_least(op.launch_piece_base + i);
          const double w1 = sg4::Engine::get_clock();
          if (w1 > w0) {
            launch_waits_in_window_s += window.overlap(w0, w1);
            if (!r.synthetic) world.trace->span(r.id, track, "wait for the loop's launches", w0, w1, op.step);
          }
        }
        sg4::this_actor::sleep_for(op.duration_s / op.launch_pieces);
      }
    } else {
      sg4::this_actor::sleep_for(forward_s);
      sg4::this_actor::sleep_for(backward_s);
    }
    const double kernels_end_s = sg4::Engine::get_clock();
    note_busy(kernels_end_s);
    r.launched_steps.wait_at_least(op.step + 1);  // kernels cannot outrun their launches
    // nor finish before the work launched last has run (training.launch_tail_s)
    const double tail_end_s = r.launch_end_s[op.step] + s.training.launch_tail_s;
    if (s.training.launch_tail_s > 0.0 && tail_end_s > sg4::Engine::get_clock()) {
      const double t0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_until(tail_end_s);
      if (!r.synthetic) world.trace->span(r.id, track, "kernels launched last", t0, tail_end_s, op.step);
    }
    const double end_s = sg4::Engine::get_clock();
    r.activities += 2;
    if (!r.synthetic) {
      // the waits inside the window (a step across its edge counts them in proportion)
      const double in_window_s = window.overlap(start_s, kernels_end_s);
      const double waited_s = std::min(exposed.total_s(), in_window_s);
      const double share = exposed.total_s() > 0.0 ? waited_s / exposed.total_s() : 0.0;
      r.compute_busy_s += in_window_s - waited_s - launch_waits_in_window_s;
      r.idle_host_s += launch_waits_in_window_s;
      r.exposed_comm_s += exposed.comm_s * share;
      r.idle_ranks_s += exposed.other_ranks_s * share;
      if (start_s >= window.start_s && end_s <= window.end_s) r.idle_host_s += end_s - kernels_end_s;
      if (backward_end_s >= 0.0 && kernels_end_s > backward_end_s) {
        // the wait after backward: the NCCL track shows when the all-reduce ran, the rest is another rank's lateness
        world.trace->span(r.id, track, "forward+backward", start_s, backward_end_s, op.step);
        world.trace->span(r.id, track, "wait for the all-reduce (NCCL, other ranks)", backward_end_s, kernels_end_s, op.step);
      } else {
        world.trace->span(r.id, track, "forward+backward", start_s, kernels_end_s, op.step);
      }
    }
    previous_end_s = end_s;
    record_step_end(r, op.step);
    r.compute.completed_ops.add();
    r.computed_steps.add();
  }
}

void side_stream_actor(Rank& r) {
  World& world = *r.world;
  for (;;) {
    StreamOp op = r.side.queue.pop();
    const double t0 = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(op.duration_s);
    const double t1 = sg4::Engine::get_clock();
    r.copy_start_s[op.step] = t0;
    r.copy_end_s[op.step] = t1;
    r.copy_busy_s += world.window.overlap(t0, t1);
    world.trace->span(r.id, kCopyTrack, "Memcpy HtoD", t0, t1, op.step);
    ++r.activities;
    r.side.completed_ops.add();
  }
}

void comm_actor(World& world, Comm& comm, bool synthetic) {
  const std::int64_t nb = static_cast<std::int64_t>(comm.bucket_bytes.size());
  const Window& window = synthetic ? world.baseline_window : world.window;
  for (std::int64_t n = 0;; ++n) {
    comm.buckets_ready.wait_at_least((n + 1) * comm.ranks);  // every rank's bucket is full
    const double t0 = sg4::Engine::get_clock();
    comm.running.add(+1, t0);
    sg4::this_actor::sleep_for(comm.bucket_time_s[n % nb]);
    const double t1 = sg4::Engine::get_clock();
    comm.running.add(-1, t1);
    if (!synthetic) {
      comm.busy_s += window.overlap(t0, t1);
      for (int rank = 0; rank < world.gpus(); ++rank) world.trace->span(rank, kCommTrack, "all_reduce", t0, t1, n / nb);
    }
    comm.buckets_done.add();
  }
}

void fsdp_comm_actor(World& world, FsdpComm& comm, bool synthetic) {
  const std::int64_t nops = static_cast<std::int64_t>(comm.ops.size());
  const Window& window = synthetic ? world.baseline_window : world.window;
  for (std::int64_t n = 0;; ++n) {
    for (Counter* c : comm.issued) c->wait_at_least(n + 1);  // every rank has issued it
    const std::size_t j = static_cast<std::size_t>(n % nops);
    const double t0 = sg4::Engine::get_clock();
    comm.busy_until_s = t0 + comm.op_s[j];
    comm.running.add(+1, t0);
    sg4::this_actor::sleep_for(comm.op_s[j]);
    const double t1 = sg4::Engine::get_clock();
    comm.running.add(-1, t1);
    if (!synthetic) {
      comm.busy_s += window.overlap(t0, t1);
      for (int rank = 0; rank < world.gpus(); ++rank) world.trace->span(rank, kCommTrack, comm.op_names[j], t0, t1, n / nops);
    }
    comm.done.add();
  }
}

// The training loop: `for batch in loader: batch.to(device); step(batch)`.
class MainLoop {
 public:
  explicit MainLoop(Rank& r)
      : r_(r), w_(*r.world), s_(*w_.scenario), p_(*w_.profile), shapes_(s_, w_.line_deal.get(), w_.node * s_.node.gpus + r.id), wander_(p_.cpu, r.rng) {
    for (const auto& [rows, length] : s_.sequence.shapes_run_before) seen_shapes_.emplace(rows, length);
    if (s_.sequence.enabled && s_.sequence.warm_up_shapes) {
      // the warm-up loop ran every padded length at the batch's rows, and at the epoch's last, smaller batch's
      const std::int64_t rows = s_.loader.batch_size, last = s_.last_batch_rows();
      for (double length : padded_lengths(s_.sequence)) {
        seen_shapes_.emplace(rows, std::llround(length));
        if (last > 0) seen_shapes_.emplace(last, std::llround(length));
      }
    }
  }

  void operator()() {
    const std::int64_t per_epoch = s_.batches_per_epoch();
    std::int64_t in_epoch = per_epoch;  // forces an epoch start at step 0
    std::int64_t epoch = -1;
    for (std::int64_t step = 0; step < w_.steps; ++step) {
      const double wait_start_s = sg4::Engine::get_clock();
      if (in_epoch == per_epoch) {
        ++epoch;
        in_epoch = 0;
        start_epoch(epoch, step);
      }
      // the batch the loop gets: the one its workers delivered, or (inline, or the synthetic twin) this step's own
      const BatchShape shape = r_.synthetic ? shapes_.next(step, epoch, samples_of(in_epoch))
                                            : get_batch(step, samples_of(in_epoch));
      const double wait_end_s = sg4::Engine::get_clock();
      ++in_epoch;
      r_.data_wait_start_s[step] = wait_start_s;
      r_.data_wait_end_s[step] = wait_end_s;
      r_.step_samples[step] = shape.samples;
      r_.step_tokens[step] = shape.tokens;
      r_.step_slots[step] = shape.slots;
      if (!r_.synthetic && wait_end_s > wait_start_s) w_.trace->span(r_.id, kMainTrack, "wait for batch", wait_start_s, wait_end_s, step);
      if (!r_.synthetic) {
        if (s_.loader.num_workers > 0) put_next_index(per_epoch);
        next_bookkeeping(step);
        copy_to_device(step, shape.bytes);
        loop_python(step, shape.samples * s_.training.gpu_decode_host_s_per_sample,
                    "decode_jpeg(device='cuda'): the call (nvJPEG's host part)");
      }
      // a new shape's plans: before the launches, or, where part of the step's kernels go out before its last plan
      // is built (new_shape_gpu_overlap_fraction), inside them (launch_step)
      const bool new_shape = first_time(shape);
      const bool plans_inside = new_shape && s_.sequence.new_shape_gpu_overlap_fraction > 0.0;
      if (new_shape && !plans_inside) build_plans(step);
      launch_step(step, s_.step_factor(shape), r_.synthetic ? 0.0 : shape.samples * s_.training.gpu_decode_s_per_sample,
                  plans_inside);
      if (!r_.synthetic && !s_.loader.pin_memory && s_.loader.num_workers > 0) release_batch(step, shape.bytes);
    }
    r_.computed_steps.wait_at_least(w_.steps);
    ++w_.finished_mains;
  }

 private:
  // The loader's count for a batch: its samples (the epoch's last may be short), or a packed batch's rows.
  int samples_of(std::int64_t batch_in_epoch) const {
    if (s_.sequence.enabled && (s_.sequence.collate == SequenceCollate::kPack || s_.sequence.batch_tokens > 0))
      return s_.loader.batch_size;  // rows, or the token budget's cap: the batch's own draw says how many samples
    const std::int64_t first = batch_in_epoch * s_.loader.batch_size;
    return static_cast<int>(std::min<std::int64_t>(s_.loader.batch_size, s_.samples_per_rank() - first));
  }

  void start_epoch(std::int64_t epoch, std::int64_t step) {
    ++r_.epochs_started;
    epoch_ = epoch;
    epoch_first_batch_ = step;
    sent_in_epoch_ = 0;
    cycle_ = 0;
    next_to_deliver_ = step;
    if (r_.synthetic || s_.loader.num_workers == 0) return;
    if (epoch == 0 || !s_.loader.persistent_workers) {
      const double t0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(s_.loader.worker_start_s);
      w_.trace->span(r_.id, kMainTrack, "start workers", t0, sg4::Engine::get_clock());
    }
    const std::int64_t per_epoch = s_.batches_per_epoch();
    const std::int64_t limit = static_cast<std::int64_t>(s_.loader.prefetch_factor) * s_.loader.num_workers;
    while (r_.outstanding < limit && sent_in_epoch_ < per_epoch) send_index();
  }

  // _try_put_index: one more index goes out when a batch is handed to the loop.
  void put_next_index(std::int64_t per_epoch) {
    const std::int64_t limit = static_cast<std::int64_t>(s_.loader.prefetch_factor) * s_.loader.num_workers;
    if (r_.outstanding < limit && sent_in_epoch_ < per_epoch) send_index();
  }

  // _try_put_index's choice of worker: the next in a cycle reset each epoch; with
  // in_order=False a worker already holding its share (prefetch_factor) is skipped.
  int next_worker() {
    const int n = s_.loader.num_workers;
    int worker = 0;
    for (int tries = 0; tries < n; ++tries) {
      worker = static_cast<int>(cycle_++ % n);
      if (s_.loader.in_order || r_.worker_outstanding[worker] < s_.loader.prefetch_factor) break;
    }
    return worker;
  }

  void send_index() {
    const int worker = next_worker();
    ++r_.worker_outstanding[worker];
    const std::int64_t batch = epoch_first_batch_ + sent_in_epoch_;
    Task t{batch, shapes_.next(batch, epoch_, samples_of(sent_in_epoch_)), sg4::Engine::get_clock()};
    ++sent_in_epoch_;
    note_outstanding(r_, +1);
    r_.worker_tasks[worker]->push(t);
  }

  void receive_on_main(const Batch& b) {
    const double t0 = sg4::Engine::get_clock();
    {
      GilHold gil(r_, kMainTrack, r_.gil_wait_main_s, r_.gil_held_main_s, b.batch);
      run_cpu(r_, ipc_receive_s(p_, b.shape.bytes) * wander_.time_factor(r_.rng));
    }
    const double t1 = sg4::Engine::get_clock();
    r_.main_receive_busy_s += w_.window.overlap(t0, t1);
    w_.trace->span(r_.id, kMainTrack, "receive batch", t0, t1, b.batch);
  }

  // The rest of next() on the loop's thread once the batch is there (loader.main_next_s_per_batch): Python with the
  // GIL, before the copy is enqueued, so a loop that syncs each step leaves the GPU idle for it (run 42, finding 8).
  // The pin thread's receive takes the GIL from it as from the loop's own Python (receive_with_gil): the pin thread's
  // measured time off its core (loader.pin_thread_wait_s_per_batch) comes from probes whose main thread ran next()
  // beside it, so its waits behind next() are already in that figure.
  void next_bookkeeping(std::int64_t step) {
    loop_python(step, s_.main_next_s(), "next(): the loader's own Python");
  }

  // A stretch of the loop thread's Python outside its step's launches (next(), the .to() call): with the GIL, on the
  // loop's CPU (the pin thread's receive may suspend it), counted in the host_loop stage's busy time. Returns the
  // part inside the measured window (0 for the synthetic twin, which is neither counted nor traced).
  double loop_python(std::int64_t step, double cpu_s, const char* what) {
    if (cpu_s <= 0.0) return 0.0;
    const double t0 = sg4::Engine::get_clock();
    {
      GilHold gil(r_, kMainTrack, r_.gil_wait_main_s, r_.gil_held_main_s, step);
      run_cpu(r_, cpu_s * wander_.time_factor(r_.rng), &r_.main_python);
    }
    if (r_.synthetic) return 0.0;
    const double t1 = sg4::Engine::get_clock();
    const double in_window_s = w_.window.overlap(t0, t1);
    r_.host_busy_s += in_window_s;
    w_.trace->span(r_.id, kMainTrack, what, t0, t1, step);
    return in_window_s;
  }

  // Whether the step's shape (rows x padded length) is one this process has not run (and now has), where new shapes
  // cost anything. The twin (the synthetic-data step) meets the same shapes: the cost is the step's, not the input
  // pipeline's.
  bool first_time(const BatchShape& shape) {
    if (!s_.sequence.enabled || s_.sequence.new_shape_host_s <= 0.0) return false;
    return seen_shapes_.insert(std::make_pair(std::llround(shape.rows), std::llround(shape.padded_length))).second;
  }

  // A new shape's first call builds its kernel plans (cuDNN attention graphs, cudnn.benchmark's search,
  // torch.compile's recompiles) on the loop's thread, GIL held (sequence.new_shape_host_s; validation run 63): before
  // its kernels are queued, so an idle GPU waits for all of it, or between the two parts of launch_step's kernels.
  void build_plans(std::int64_t step) {
    const double in_window_s = loop_python(step, s_.sequence.new_shape_host_s, "new batch shape: kernel plans built");
    blocked_since_launch_ = true;  // the launches that follow are not back to back with the last step's
    r_.new_shape_busy_s += in_window_s;
    if (in_window_s > 0.0) ++r_.new_shapes_in_window;
  }

  // Dropping an unpinned batch after its step unmaps the worker's shared memory on the loop's thread, outside
  // next(): the harness's `del batch` after the sync; a plain `for batch in loader` drops it when the next batch is
  // bound, also outside next() and also serial with the loop. Counted with the receive (the same mapping's cost).
  // Without the GIL: PyTorch frees a tensor under gil_scoped_release (docs/model.md, the pin thread's release).
  void release_batch(std::int64_t step, double bytes) {
    const double release_s = unpinned_release_s(p_, bytes);
    if (release_s <= 0.0) return;
    const double t0 = sg4::Engine::get_clock();
    run_cpu(r_, release_s * wander_.time_factor(r_.rng));
    const double t1 = sg4::Engine::get_clock();
    r_.main_receive_busy_s += w_.window.overlap(t0, t1);
    w_.trace->span(r_.id, kMainTrack, "release batch (unmap)", t0, t1, step);
  }

  // Returns the shape of the batch handed to the loop.
  BatchShape get_batch(std::int64_t step, int loader_batch) {
    if (s_.loader.num_workers == 0) {  // inline in __next__: fetch, collate, pin
      blocked_since_launch_ = true;    // not a block, but not launches back to back either
      const BatchShape shape = shapes_.next(step, epoch_, loader_batch);
      const double t0 = sg4::Engine::get_clock();
      std::unique_lock lock(*r_.gil);
      const double read_cpu_s = read_storage(r_, shape.samples);
      double cpu_s = sum_of_draws(s_.dataset.load_s_per_sample, shape.samples, r_.rng) + tokenize_s(s_, shape) +
                     read_cpu_s + worker_collate_s(s_, p_, shape.bytes);
      if (s_.loader.pin_memory) cpu_s += pin_copy_s(p_, shape.bytes);
      run_cpu(r_, cpu_s);
      const double t1 = sg4::Engine::get_clock();
      r_.inline_load_busy_s += w_.window.overlap(t0, t1);
      w_.trace->span(r_.id, kMainTrack, "load+collate (inline)", t0, t1, step);
      return shape;
    }
    Fifo<Batch>& source = s_.loader.pin_memory ? r_.pinned : r_.arrivals;
    // In order: receive in arrival order, stash early ones, return the expected one.
    for (;;) {
      if (s_.loader.in_order) {
        auto it = stash_.find(next_to_deliver_);
        if (it != stash_.end()) {
          const BatchShape shape = it->second.shape;
          hand_over(it->second);
          stash_.erase(it);
          return shape;
        }
      } else if (!stash_.empty()) {
        const BatchShape shape = stash_.begin()->second.shape;
        hand_over(stash_.begin()->second);
        stash_.erase(stash_.begin());
        return shape;
      }
      const double pop_start_s = sg4::Engine::get_clock();
      Batch b = source.pop();
      if (sg4::Engine::get_clock() > pop_start_s) blocked_since_launch_ = true;
      r_.main_wait_for_batch_s += w_.window.overlap(pop_start_s, sg4::Engine::get_clock());
      if (!s_.loader.pin_memory) receive_on_main(b);
      stash_.emplace(b.batch, StashedBatch{b.batch, b.shape, b.sent_s, b.worker});
    }
  }

  struct StashedBatch {
    std::int64_t batch;
    BatchShape shape;
    double sent_s;
    int worker;
  };

  void hand_over(const StashedBatch& b) {
    const double now = sg4::Engine::get_clock();
    ++next_to_deliver_;
    note_outstanding(r_, -1);
    if (b.worker >= 0) --r_.worker_outstanding[b.worker];  // _process_data: _workers_num_tasks -= 1
    if (s_.loader.pin_memory) {
      r_.pinned_bytes -= b.shape.bytes;
      w_.trace->counter(r_.id, "pinned_bytes", now, r_.pinned_bytes);
    }
    if (now >= w_.window.start_s) {
      r_.latency_sum_s += now - b.sent_s;
      ++r_.latency_count;
    }
  }

  // The .to() call's own host time (transfer.copy_call_s_per_batch): Python with the GIL before the copy is
  // enqueued, so like next() it delays the GPU after a sync (validation run 43).
  void copy_call(std::int64_t step) {
    loop_python(step, s_.transfer.copy_call_s_per_batch * back_to_back_factor(), ".to(): the copy call");
  }

  // training.back_to_back_host_factor where the loop has not blocked since its last launches (no sync, no wait for a
  // batch or for the launch queue), else 1: the harness times the loop's Python after a sync (validation-runs.md
  // run 62, finding 10).
  double back_to_back_factor() const { return blocked_since_launch_ ? 1.0 : s_.training.back_to_back_host_factor; }

  void copy_to_device(std::int64_t step, double bytes) {
    copy_call(step);
    const double duration_s = h2d_copy_s(s_, p_, bytes);
    const bool pinned = s_.loader.pin_memory;
    const bool side = s_.transfer.copy_stream == CopyStream::kSide;
    Stream& stream = side ? r_.side : r_.compute;
    stream.queue.push(StreamOp{StreamOp::Kind::kCopy, step, duration_s, 0.0, 0});
    const std::int64_t op_number = ++stream.enqueued_ops;
    // A pageable source is staged by the calling thread; a blocking copy waits for the stream.
    if (!pinned || !s_.transfer.non_blocking) {
      const double t0 = sg4::Engine::get_clock();
      stream.completed_ops.wait_at_least(op_number);
      w_.trace->span(r_.id, kMainTrack, pinned ? "cudaMemcpy (blocking)" : "cudaMemcpy (pageable, staged)", t0,
                     sg4::Engine::get_clock(), step);
      blocked_since_launch_ = true;
    }
  }

  // Stalls while the pin thread works on a worker's mapping: until it is done, or, with
  // training.memory_map_wait_s, that long at each need that finds it working (a fault waiting behind the pin
  // thread's, not the whole batch's work), and no longer than that work lasts: a fault behind the map's lock
  // goes on once the lock is free, so the loop loses wait / (interval + wait) of the work's length, as
  // models::memory_map_stall_s has it, not that plus the part of its last wait after the work ended.
  void wait_for_memory_map(std::int64_t step) {
    const double t0 = sg4::Engine::get_clock();
    if (s_.training.memory_map_wait_s > 0.0) {
      if (r_.memory_map_busy)
        r_.memory_map_releases.wait_at_least_for(r_.memory_map_releases.value() + 1, s_.training.memory_map_wait_s);
    } else {
      r_.memory_map->lock();
      r_.memory_map->unlock();
    }
    const double t1 = sg4::Engine::get_clock();
    if (t1 > t0 && !r_.synthetic) {
      r_.memory_map_wait_main_s += w_.window.overlap(t0, t1);
      w_.trace->span(r_.id, kMainTrack, "wait for the memory map (pin thread: map, touch, unmap)", t0, t1, step);
    }
  }

  // step_factor: this batch's GPU step over training.step_s's (Scenario::step_factor: a sequence batch's shape);
  // decode_s: its GPU JPEG decode ahead of the step's kernels (none for the synthetic twin).
  // With plans_inside (a new shape whose first kernels go out before its last plan is built: validation run 63,
  // finding 7), the step's kernels are queued in two parts around the plan build: the first
  // new_shape_gpu_overlap_fraction of its GPU time, which runs while the plans build, then the rest.
  void launch_step(std::int64_t step, double step_factor, double decode_s, bool plans_inside = false) {
    // The launch queue holds only so many steps: wait for an old one to finish.
    const double queue_wait0_s = sg4::Engine::get_clock();
    r_.computed_steps.wait_at_least(step + 1 - s_.training.max_steps_ahead);
    if (sg4::Engine::get_clock() > queue_wait0_s || plans_inside) blocked_since_launch_ = true;
    const double host_factor = back_to_back_factor();
    double duration_s = s_.training.step_s() * step_factor;
    if (s_.training.step_cv > 0.0) duration_s = sample(Distribution{duration_s, s_.training.step_cv}, r_.rng);
    StreamOp op{StreamOp::Kind::kCompute, step, duration_s, decode_s, 0};
    if (!r_.synthetic && s_.transfer.copy_stream == CopyStream::kSide) op.wait_side_ops = r_.side.enqueued_ops;
    if (plans_inside) {
      const double before_s = duration_s * s_.sequence.new_shape_gpu_overlap_fraction;
      StreamOp first = op;
      first.duration_s = before_s;
      first.first_part = true;
      r_.compute.queue.push(first);
      ++r_.compute.enqueued_ops;
      build_plans(step);
      op.duration_s = duration_s - before_s;
      op.decode_s = 0.0;  // with the first part
    }
    const bool pin_thread = s_.loader.pin_memory && s_.loader.num_workers > 0;
    const int slices = gil_slices(s_.training.host_s_per_step, pin_thread);
    const bool map_shared = pin_thread && s_.training.host_needs_memory_map && !r_.synthetic;  // twin: no loader
    const int chunks = memory_map_chunks(
        s_.training.host_s_per_step / slices, map_shared,
        memory_map_interval_s(s_.training.host_s_per_step, s_.training.memory_map_needs_per_step));
    // The kernels follow the launches in pieces (kMaxLaunchPieces) where the loop's Python is split at all (a pin
    // thread beside it); DDP's buckets, FSDP's units and a new shape's plans keep their own timing of the step.
    const int host_pieces = slices * chunks;
    const int pieces = (s_.training.host_s_per_step > 0.0 && !plans_inside && !r_.comm && !r_.fsdp)
                           ? std::min(host_pieces, kMaxLaunchPieces) : 0;
    if (pieces > 1) {
      op.launch_pieces = pieces;
      op.launch_piece_base = r_.launch_pieces_pushed;
      r_.launch_pieces_pushed += pieces;
    }
    r_.compute.queue.push(op);
    ++r_.compute.enqueued_ops;
    if (s_.training.host_s_per_step > 0.0) {
      const double t0 = sg4::Engine::get_clock();
      // The loop's Python drops the GIL at every op: beside a pin thread, the pin thread's receive takes it at the
      // loop's next op (receive_with_gil) and lands inside the loop's step (its Python
      // stretched) rather than between steps. The slices of CPython's switch interval pace the memory map's
      // chunks, and hand the lock over where the loop waits for the map with the GIL held.
      // A loop that needs the memory map also stalls whenever the pin thread works on a worker's mapping.
      double host_s = 0.0;
      std::int64_t pieces_done = 0;
      for (int i = 0; i < slices; ++i) {
        GilHold gil(r_, kMainTrack, r_.gil_wait_main_s, r_.gil_held_main_s, step);
        if (i == 0) host_s = s_.training.host_s_per_step * host_factor * wander_.time_factor(r_.rng);  // GIL held
        for (int c = 0; c < chunks; ++c) {
          if (map_shared) wait_for_memory_map(step);
          run_cpu(r_, host_s / slices / chunks, &r_.main_python);  // the pin thread may suspend it
          if (pieces > 1) {
            // the launch pieces this chunk completes (host pieces grouped evenly into the GPU's pieces)
            const std::int64_t reached = static_cast<std::int64_t>(i * chunks + c + 1) * pieces / host_pieces;
            if (reached > pieces_done) {
              r_.launched_pieces.add(reached - pieces_done);
              pieces_done = reached;
            }
          }
        }
      }
      const double t1 = sg4::Engine::get_clock();
      if (!r_.synthetic) {
        r_.host_busy_s += w_.window.overlap(t0, t1);
        w_.trace->span(r_.id, kMainTrack, "training step (python)", t0, t1, step);
      }
    }
    // DDP's reducer work runs in backward on the autograd thread, in C++ (GIL released), while
    // the loop waits in loss.backward(): the loop's own time, without the GIL.
    if (r_.comm && r_.comm->host_s_per_step > 0.0) {
      const double t0 = sg4::Engine::get_clock();
      run_cpu(r_, r_.comm->host_s_per_step);
      const double t1 = sg4::Engine::get_clock();
      if (!r_.synthetic) {
        r_.host_busy_s += w_.window.overlap(t0, t1);
        w_.trace->span(r_.id, kMainTrack, "DDP reducer (backward hooks, all-reduce calls)", t0, t1, step);
      }
    }
    r_.launch_end_s[step] = sg4::Engine::get_clock();
    r_.launched_steps.add();
    blocked_since_launch_ = false;
    const int k = s_.training.sync_every_steps;
    if (k > 0 && (step + 1) % k == 0) {
      const double t0 = sg4::Engine::get_clock();
      r_.computed_steps.wait_at_least(step + 1);
      if (!r_.synthetic) w_.trace->span(r_.id, kMainTrack, "sync (.item())", t0, sg4::Engine::get_clock(), step);
      blocked_since_launch_ = true;
    }
  }

  Rank& r_;
  World& w_;
  const Scenario& s_;
  const Profile& p_;
  ShapeStream shapes_;
  std::int64_t epoch_ = 0;  // the epoch started last (start_epoch)
  std::int64_t epoch_first_batch_ = 0;
  std::int64_t sent_in_epoch_ = 0;
  std::int64_t cycle_ = 0;
  std::int64_t next_to_deliver_ = 0;
  std::map<std::int64_t, StashedBatch> stash_;  // received early, by batch number
  CoreWander wander_;  // the main thread's core, as the workers' and the pin thread's
  bool blocked_since_launch_ = true;  // a sync or a wait since the last launches (back_to_back_factor)
  std::set<std::pair<long long, long long>> seen_shapes_;  // (rows, padded length) run so far (sequence only)
};

// ---------------------------------------------------------------- setup and results

// The node's CPU: per-core speed falls with busy cores (measured), and runnable threads
// beyond the cores cost extra (context switches, cache refills).
void configure_cpu(sg4::Host* cpu, const Profile& profile, int cores) {
  std::vector<double> capacity_by_runnable(4 * static_cast<std::size_t>(cores) + 64);
  for (std::size_t n = 0; n < capacity_by_runnable.size(); ++n)
    capacity_by_runnable[n] = kFlopsPerCoreSecond * cpu_capacity_cores(profile.cpu, cores, static_cast<int>(n));
  const CpuProfile cpu_profile = profile.cpu;
  cpu->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR,
                          [table = std::move(capacity_by_runnable), cpu_profile, cores](double, int n) {
                            if (n < static_cast<int>(table.size())) return table[n];
                            return kFlopsPerCoreSecond * cpu_capacity_cores(cpu_profile, cores, n);
                          });
}

// The storage device under device_share=follows_readers: n reads in flight share min(bandwidth, n x the
// per-reader stream rate at n readers), equally, so each read's rate follows the count reading at every moment
// (a read started alone slows when others join, and speeds up when they finish).
void configure_storage(sg4::Host* storage, const StorageConfig& st) {
  if (st.device_share != DeviceShare::kFollowsReaders || st.stream_read_bytes_per_s <= 0.0) return;
  storage->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR, [st](double capacity, int n) {
    if (n <= 0) return capacity;
    return std::min(capacity, n * stream_read_rate(st.stream_read_bytes_per_s, st.stream_read_vs_readers, n));
  });
}

std::shared_ptr<Comm> make_comm(const Scenario& s, const Profile& p) {
  if (!s.all_reduces_gradients()) return nullptr;
  auto comm = std::make_shared<Comm>();
  comm->ranks = s.simulated_ranks();
  comm->bucket_bytes = s.ddp.bucket_bytes();
  comm->total_bytes = std::accumulate(comm->bucket_bytes.begin(), comm->bucket_bytes.end(), 0.0);
  // every rank of the job (all nodes'), over the node's links or the network (models/collectives.hpp)
  const CollectiveModel model = job_collectives(s, p).all_reduce;
  for (double b : comm->bucket_bytes) comm->bucket_time_s.push_back(collective_time_s(model, b, all_reduce_bus_factor(s.world_size())));
  comm->host_s_per_step = s.ddp_host_s();
  return comm;
}

}  // namespace

std::shared_ptr<FsdpComm> make_fsdp(const Scenario& s, const Profile& p) {
  if (!s.fsdp.enabled()) return nullptr;
  auto f = std::make_shared<FsdpComm>();
  f->ops = fsdp_step_ops(s.fsdp);
  const NcclProfile collectives = job_collectives(s, p);
  const int units = static_cast<int>(s.fsdp.unit_parameter_bytes.size());
  f->forward_gather.assign(units, -1);
  f->backward_gather.assign(units, -1);
  f->reduce_scatter.assign(units, -1);
  for (std::size_t j = 0; j < f->ops.size(); ++j) {
    const FsdpOp& op = f->ops[j];
    f->op_s.push_back(fsdp_op_s(op, collectives, s.world_size()));
    f->op_names.push_back(std::string(op.kind == FsdpOp::Kind::kAllGather ? "all_gather" : "reduce_scatter") + " unit " +
                          std::to_string(op.unit) +
                          (op.backward && op.kind == FsdpOp::Kind::kAllGather ? " (backward)" : ""));
    auto& index = op.kind == FsdpOp::Kind::kReduceScatter ? f->reduce_scatter
                  : op.backward                          ? f->backward_gather
                                                         : f->forward_gather;
    index[op.unit] = static_cast<int>(j);
  }
  for (double b : s.fsdp.unit_parameter_bytes) f->total_parameter_bytes += b;
  return f;
}

namespace {

// One node's hosts: its CPU (its cores shared by its workers, pin and main threads), its storage device, its GPUs, and
// the synthetic twins' CPU and GPUs. Node 0's names are the plain ones; another simulated node's carry "nN-".
struct NodeHosts {
  sg4::Host* cpu = nullptr;
  Store* store = nullptr;
  sg4::Host* baseline_cpu = nullptr;
  std::vector<sg4::Host*> gpus, baseline_gpus;
};

// The simulated nodes that read one store: storage.nodes_sharing of them (all the simulated ones where fewer), each
// store created with the first node that reads it.
int nodes_a_store(const Scenario& s) { return std::max(1, std::min(s.storage.nodes_sharing, s.cluster.simulated_nodes)); }

// The names of a simulated node's hosts and actors start with this: nothing for node 0 (a one-node job's names),
// "nN-" for another.
std::string node_prefix(int node) {
  std::string prefix;
  if (node != 0) prefix.append("n").append(std::to_string(node)).append("-");
  return prefix;
}

NodeHosts create_node_hosts(sg4::NetZone* zone, const Scenario& scenario, const Profile& profile, int node,
                            std::vector<std::unique_ptr<Store>>& stores) {
  const std::string prefix = node_prefix(node);
  const int gpus = scenario.node.gpus;
  NodeHosts h;
  // One action may run at most at its host's per-core speed, so the per-core speed is the curve's
  // peak: where the measured curve rises above 1 (the H200 machine: 1.07-1.11 with several busy
  // cores, frequency ramping with load), a lone thread at 1 busy core still gets 1.0 from the
  // sharing function, and busy ones get the curve's value. With the speed left at 1.0 the curve's
  // values above 1 were cut off and CPU stages ran up to 11% slower than their measured speed
  // (validation run 12, pin-bound cases).
  const double peak_speed = peak_relative_speed(profile.cpu.speed_vs_busy_cores);
  h.cpu = zone->create_host(prefix + "cpu", kFlopsPerCoreSecond * peak_speed)->set_core_count(scenario.node.cpu_cores);
  configure_cpu(h.cpu, profile, scenario.node.cpu_cores);
  const int per_store = nodes_a_store(scenario);
  if (node % per_store == 0) {
    // storage.read_bytes_per_s is one node's share of the store; the store pools the shares of the nodes it serves
    auto store = std::make_unique<Store>();
    store->nodes = std::min(per_store, scenario.cluster.simulated_nodes - node);
    store->host = zone->create_host(prefix + "storage", scenario.storage.read_bytes_per_s * store->nodes);
    configure_storage(store->host, scenario.storage);
    if (scenario.storage.metadata_ops_per_s > 0.0)
      store->metadata = zone->create_host(prefix + "metadata", scenario.storage.metadata_ops_per_s * store->nodes);
    stores.push_back(std::move(store));
  }
  h.store = stores[static_cast<std::size_t>(node / per_store)].get();
  h.baseline_cpu = zone->create_host(prefix + "baseline", kFlopsPerCoreSecond)->set_core_count(gpus);
  for (int g = 0; g < gpus; ++g) {
    h.gpus.push_back(zone->create_host(prefix + "gpu" + std::to_string(g), kFlopsPerCoreSecond));
    h.baseline_gpus.push_back(zone->create_host(prefix + "baseline_gpu" + std::to_string(g), kFlopsPerCoreSecond));
  }
  return h;
}

// A node's ranks and their synthetic twins, with their actors; node 0 also starts the collectives' actors (they
// serve every simulated node's ranks) and is the only one traced.
void start_node(World& world, const NodeHosts& hosts, TraceRecorder& trace) {
  const Scenario& scenario = *world.scenario;
  const int gpus = scenario.node.gpus;
  for (int pass = 0; pass < 2; ++pass) {
    const bool synthetic = pass == 1;
    for (int g = 0; g < gpus; ++g) {
      auto rank = std::make_unique<Rank>();
      Rank& r = *rank;
      r.id = g;
      r.synthetic = synthetic;
      r.world = &world;
      r.comm = synthetic ? world.baseline_comm.get() : world.comm.get();
      r.fsdp = synthetic ? world.baseline_fsdp.get() : world.fsdp.get();
      if (r.fsdp) r.fsdp->issued.push_back(&r.fsdp_issued);
      r.cpu = synthetic ? hosts.baseline_cpu : hosts.cpu;
      r.gpu = synthetic ? hosts.baseline_gpus[g] : hosts.gpus[g];
      r.gil = sg4::Mutex::create();
      r.memory_map = sg4::Mutex::create();
      r.slow_worker_gil = sg4::Mutex::create();
      // node 0's draws are those of a one-node job; another node's ranks draw apart
      const std::uint64_t rank_key = static_cast<std::uint64_t>(g) + 1 + static_cast<std::uint64_t>(world.node) * 0x10000ULL;
      r.rng = Rng(derive_seed(scenario.seed, rank_key, synthetic ? 2 : 1));
      for (auto* v : {&r.step_end_s, &r.data_wait_start_s, &r.data_wait_end_s, &r.copy_start_s, &r.copy_end_s, &r.launch_end_s})
        v->assign(world.steps, 0.0);
      r.step_samples.assign(world.steps, 0);
      r.step_tokens.assign(world.steps, 0.0);
      r.step_slots.assign(world.steps, 0.0);
      const std::string prefix = node_prefix(world.node) + (synthetic ? "baseline" : "rank") + std::to_string(g);
      if (!synthetic) {
        trace.name_process(g, "rank " + std::to_string(g) + " (GPU " + std::to_string(g) + ")", g);
        trace.name_thread(g, kMainTrack, "main thread (training loop)", 0);
        r.worker_outstanding.assign(scenario.loader.num_workers, 0);
        for (int w = 0; w < scenario.loader.num_workers; ++w) {
          r.worker_tasks.push_back(std::make_unique<Fifo<Task>>());
          trace.name_thread(g, kWorkerTrack0 + w, "worker " + std::to_string(w), 10 + w);
          sg4::Actor::create(prefix + "-worker" + std::to_string(w), hosts.cpu, [&r, w]() { worker_actor(r, w); })->daemonize();
          if (scenario.loader.put_beside_worker()) {
            r.worker_feeds.push_back(std::make_unique<Fifo<Feed>>());
            trace.name_thread(g, kFeederTrack0 + w, "worker " + std::to_string(w) + "'s feeder (the put)",
                              10 + scenario.loader.num_workers + w);
            sg4::Actor::create(prefix + "-feeder" + std::to_string(w), hosts.cpu, [&r, w]() { feeder_actor(r, w); })
                ->daemonize();
          }
        }
        if (scenario.loader.pin_memory && scenario.loader.num_workers > 0) {
          trace.name_thread(g, kPinTrack, "pin_memory thread", 1);
          sg4::Actor::create(prefix + "-pin", hosts.cpu, [&r]() { pin_thread_actor(r); })->daemonize();
        }
        if (scenario.transfer.copy_stream == CopyStream::kSide) {
          trace.name_thread(g, kCopyTrack, "copy stream (H2D)", 2);
          sg4::Actor::create(prefix + "-copy", r.gpu, [&r]() { side_stream_actor(r); })->daemonize();
        }
        trace.name_thread(g, kComputeTrack, "compute stream", 3);
        if (world.comm) trace.name_thread(g, kCommTrack, "NCCL all-reduce", 4);
        if (world.fsdp) trace.name_thread(g, kCommTrack, "NCCL (FSDP all-gather, reduce-scatter)", 4);
      }
      sg4::Actor::create(prefix + "-compute", r.gpu, [&r]() { compute_stream_actor(r); })->daemonize();
      sg4::Actor::create(prefix + "-main", r.cpu, [&r]() { MainLoop loop(r); loop(); });
      world.ranks.push_back(std::move(rank));
    }
    if (world.node != 0) continue;
    Comm* comm = synthetic ? world.baseline_comm.get() : world.comm.get();
    if (comm) sg4::Actor::create(synthetic ? "baseline-comm" : "comm", synthetic ? hosts.baseline_gpus[0] : hosts.gpus[0],
                                 [&world, comm, synthetic]() { comm_actor(world, *comm, synthetic); })->daemonize();
    FsdpComm* fsdp = synthetic ? world.baseline_fsdp.get() : world.fsdp.get();
    if (fsdp) sg4::Actor::create(synthetic ? "baseline-fsdp" : "fsdp", synthetic ? hosts.baseline_gpus[0] : hosts.gpus[0],
                                 [&world, fsdp, synthetic]() { fsdp_comm_actor(world, *fsdp, synthetic); })->daemonize();
  }
}

}  // namespace

SimResult simulate(const Scenario& scenario, const Profile& profile, const SimOptions& options, TraceRecorder& trace) {
  // cluster.simulated_nodes: node 0 is the node reported; the others run beside it, each with its own loaders, cores
  // and storage drawn apart, so that the collectives wait for the slowest of all their ranks
  const int nodes = scenario.cluster.simulated_nodes;
  std::vector<std::unique_ptr<World>> worlds;
  TraceRecorder untraced(false);  // the other simulated nodes are not traced
  for (int n = 0; n < nodes; ++n) {
    auto w = std::make_unique<World>();
    w->node = n;
    w->scenario = &scenario;
    w->profile = &profile;
    w->trace = n == 0 ? &trace : &untraced;
    w->steps = options.steps > 0 ? options.steps : scenario.training.steps;
    w->warmup = std::min(scenario.training.warmup_steps, w->steps / 2);
    w->step_done_count.assign(w->steps, 0);
    w->baseline_step_done_count.assign(w->steps, 0);
    w->node_step_end_s.assign(w->steps, 0.0);
    w->baseline_step_end_s.assign(w->steps, 0.0);
    if (w->warmup == 0) w->window.start_s = w->baseline_window.start_s = 0.0;
    worlds.push_back(std::move(w));
  }
  World& world = *worlds.front();
  const int gpus = scenario.node.gpus;
  if (scenario.sequence.enabled && !scenario.sequence.histogram_tokens.empty() && !scenario.sequence.replacement)
    world.line_deal = std::make_shared<LineDeal>(scenario, scenario.batches_per_epoch() * gpus * nodes);

  std::vector<std::string> args_storage = {"pipeplan", "--log=root.thresh:critical", "--log=no_loc",
                                           "--cfg=contexts/stack-size:128", "--cfg=contexts/guard-size:0"};
  // For debugging builds: extra SimGrid settings, space separated; a sanitizer build needs larger stacks,
  // PIPEPLAN_SIMGRID_CFG="contexts/stack-size:8192" (thread contexts hang at the end: daemon actors are killed
  // inside simcalls, and the unwinding's mutex unlocks wait for a scheduler that has stopped).
  if (const char* extra = std::getenv("PIPEPLAN_SIMGRID_CFG")) {
    std::istringstream settings(extra);
    for (std::string setting; settings >> setting;) args_storage.push_back("--cfg=" + setting);
  }
  std::vector<char*> argv;
  for (auto& a : args_storage) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine engine(&argc, argv.data());

  auto* zone = sg4::create_full_zone("node");
  std::vector<NodeHosts> hosts;
  std::vector<std::unique_ptr<Store>> stores;
  for (int n = 0; n < nodes; ++n) hosts.push_back(create_node_hosts(zone, scenario, profile, n, stores));
  zone->seal();

  world.comm = make_comm(scenario, profile);
  world.baseline_comm = make_comm(scenario, profile);
  world.fsdp = make_fsdp(scenario, profile);
  world.baseline_fsdp = make_fsdp(scenario, profile);
  for (auto& w : worlds) {
    w->store = hosts[static_cast<std::size_t>(w->node)].store;
    w->comm = world.comm;
    w->baseline_comm = world.baseline_comm;
    w->fsdp = world.fsdp;
    w->baseline_fsdp = world.baseline_fsdp;
    w->line_deal = world.line_deal;
  }

  bool deadlocked = false;
  sg4::Engine::on_deadlock_cb([&deadlocked]() { deadlocked = true; });
  for (auto& w : worlds) start_node(*w, hosts[static_cast<std::size_t>(w->node)], *w->trace);

  engine.run();
  for (auto& w : worlds)
    if (deadlocked || w->finished_mains != 2 * gpus)
      throw std::runtime_error("the simulation could not make progress (a stage waits forever); this is a pipeplan bug: please report the scenario");

  // ---- results
  SimResult res;
  res.steps = world.steps;
  res.warmup_steps = world.warmup;
  res.simulated_end_s = sg4::Engine::get_clock();
  const double w0 = world.warmup > 0 ? world.node_step_end_s[world.warmup - 1] : 0.0;
  const double w1 = world.node_step_end_s[world.steps - 1];
  res.window_s = w1 - w0;
  res.mean_busy_cores =
      res.window_s > 0.0 ? (world.cpu_integral_window_end - world.cpu_integral_window_start) / res.window_s : 0.0;
  res.storage_readers_in_flight_mean = world.store->readers.mean();
  res.storage_wait_s_per_file = world.storage_files > 0.0 ? world.storage_wait_s / world.storage_files : 0.0;
  res.storage_getitem_in_flight_mean = world.workers_in_getitem.mean();
  std::vector<double> step_times;
  double samples = 0.0, tokens = 0.0, slots = 0.0;
  for (std::int64_t i = world.warmup; i < world.steps; ++i) {
    step_times.push_back(world.node_step_end_s[i] - (i > 0 ? world.node_step_end_s[i - 1] : 0.0));
    for (int g = 0; g < gpus; ++g) {
      samples += world.ranks[g]->step_samples[i];
      tokens += world.ranks[g]->step_tokens[i];
      slots += world.ranks[g]->step_slots[i];
    }
  }
  const double window = std::max(res.window_s, 1e-12);
  res.samples_per_s = samples / window;
  res.tokens_per_s = tokens / window;
  res.token_slots_per_s = slots / window;
  res.steps_per_s = static_cast<double>(step_times.size()) / window;
  res.step_mean_s = std::accumulate(step_times.begin(), step_times.end(), 0.0) / std::max<std::size_t>(1, step_times.size());
  const StepTimeShape shape = step_time_shape(step_times);
  res.step_p50_s = shape.p50_s;
  res.step_p80_s = shape.p80_s;
  res.step_p90_s = shape.p90_s;
  res.step_p95_s = shape.p95_s;
  res.step_p99_s = shape.p99_s;
  res.long_step_fraction = shape.long_step_fraction;
  res.step_p90_on_edge = shape.p90_on_edge;

  const double b0 = world.warmup > 0 ? world.baseline_step_end_s[world.warmup - 1] : 0.0;
  const double b1 = world.baseline_step_end_s[world.steps - 1];
  double baseline_samples = 0.0;  // the twin ranks carry the same batch sizes, step by step
  for (std::int64_t i = world.warmup; i < world.steps; ++i)
    for (int g = 0; g < gpus; ++g) baseline_samples += world.ranks[gpus + g]->step_samples[i];
  res.baseline_samples_per_s = b1 > b0 ? baseline_samples / (b1 - b0) : 0.0;
  res.baseline_step_mean_s = step_times.empty() ? 0.0 : (b1 - b0) / static_cast<double>(step_times.size());

  // Per-unit busy fractions, averaged over ranks; capacities are filled in by the report.
  const Scenario& s = scenario;
  double worker = 0, pin = 0, recv = 0, host = 0, inline_load = 0, copy = 0, compute = 0;
  double idle_data = 0, idle_copy = 0, idle_host = 0, exposed = 0, idle_ranks = 0, in_flight = 0, latency = 0, latency_n = 0;
  double out_of_order = 0, gil_main = 0, gil_pin = 0, gil_held_main = 0, gil_held_pin = 0;
  double map_wait_main = 0, map_held_pin = 0, wait_for_batch = 0, new_shape = 0, new_shapes = 0;
  double worker_storage_wait = 0;
  for (int g = 0; g < gpus; ++g) {
    Rank& r = *world.ranks[g];
    note_outstanding(r, 0);  // close the time integral at the end
    worker += s.loader.num_workers > 0 ? r.worker_busy_s / s.loader.num_workers : 0.0;
    worker_storage_wait += s.loader.num_workers > 0 ? r.worker_storage_wait_s / s.loader.num_workers : 0.0;
    pin += r.pin_busy_s;
    recv += r.main_receive_busy_s;
    wait_for_batch += r.main_wait_for_batch_s;
    host += r.host_busy_s;
    new_shape += r.new_shape_busy_s;
    new_shapes += static_cast<double>(r.new_shapes_in_window);
    inline_load += r.inline_load_busy_s;
    copy += r.copy_busy_s;
    compute += r.compute_busy_s;
    idle_data += r.idle_data_s;
    idle_copy += r.idle_copy_s;
    idle_host += r.idle_host_s;
    exposed += r.exposed_comm_s;
    idle_ranks += r.idle_ranks_s;
    gil_main += r.gil_wait_main_s;
    gil_pin += r.gil_wait_pin_s;
    gil_held_main += r.gil_held_main_s;
    gil_held_pin += r.gil_held_pin_s;
    map_wait_main += r.memory_map_wait_main_s;
    map_held_pin += r.memory_map_held_pin_s;
    in_flight += r.outstanding_integral;
    latency += r.latency_sum_s;
    latency_n += static_cast<double>(r.latency_count);
    if (s.loader.num_workers > 1)
      out_of_order += out_of_order_fraction(r.batch_done_s, world.window.start_s, world.window.end_s);
    res.epochs_started = std::max(res.epochs_started, r.epochs_started);
  }
  for (auto& r : world.ranks) {
    res.des_events += r->activities;
    res.replay_wrapped_batches += r->replay_wrapped_batches;
  }
  auto frac = [&](double busy_sum) { return std::clamp(busy_sum / gpus / window, 0.0, 1.0); };
  auto add_stage = [&](const char* name, const char* description, double busy) {
    res.stages.push_back(StageReport{name, description, busy, -1.0});
  };
  if (s.storage.page_cache_hit_ratio < 1.0)
    add_stage("storage", "device reads (bandwidth, IOPS) shared by every reader of the node",
              std::clamp(world.store->device_bytes / (s.storage.read_bytes_per_s * world.store->nodes) / window, 0.0, 1.0));
  if (world.store->metadata != nullptr)
    add_stage("metadata", "file opens on the store's metadata server, shared by every reader",
              std::clamp(world.store->opens_in_window / (s.storage.metadata_ops_per_s * world.store->nodes) / window,
                         0.0, 1.0));
  if (s.loader.num_workers > 0) {
    add_stage("workers", "worker processes: __getitem__ (read, decode, augment) and collate", frac(worker));
    if (s.loader.pin_memory)
      add_stage("pin_thread", "the pin_memory thread: receive each batch from a worker, copy it into pinned memory", frac(pin));
    else
      add_stage("main_receive", "the main thread receiving each batch from a worker and releasing it after its step "
                                "(shared memory map)", frac(recv));
  } else {
    add_stage("main_inline_load", "the main thread loading, collating (and pinning) each batch itself (num_workers=0)", frac(inline_load));
  }
  if (s.loop_thread_s() > 0.0 || new_shape > 0.0)
    add_stage("host_loop", s.ddp_host_s() > 0.0 ? "the training loop's Python per step (holds the GIL) and DDP's host work"
                                                 : "the training loop's Python per step (holds the GIL)",
              frac(host));
  add_stage("h2d_copy", s.loader.pin_memory ? "host-to-device copy from pinned memory" : "host-to-device copy from pageable memory (staged)", frac(copy));
  add_stage("gpu_compute", "forward and backward kernels on the compute stream", frac(compute));
  if (world.comm) add_stage("comm", "DDP gradient all-reduce (NCCL)", std::clamp(world.comm->busy_s / window, 0.0, 1.0));
  if (world.fsdp)
    add_stage("comm", "FSDP all-gathers and reduce-scatters (NCCL)", std::clamp(world.fsdp->busy_s / window, 0.0, 1.0));

  res.gpu.busy_fraction = frac(compute);
  res.gpu.idle_waiting_for_data_fraction = frac(idle_data);
  res.gpu.idle_waiting_for_copy_fraction = frac(idle_copy);
  res.gpu.idle_host_fraction = frac(idle_host);
  res.gpu.exposed_comm_fraction = frac(exposed);
  res.gpu.idle_waiting_for_ranks_fraction = frac(idle_ranks);
  res.gil_wait_main_fraction = frac(gil_main);
  res.gil_wait_pin_fraction = frac(gil_pin);
  res.gil_held_main_fraction = frac(gil_held_main);
  res.gil_held_pin_fraction = frac(gil_held_pin);
  res.memory_map_wait_main_fraction = frac(map_wait_main);
  res.memory_map_held_pin_fraction = frac(map_held_pin);
  res.main_wait_for_batch_fraction = frac(wait_for_batch);
  res.worker_storage_wait_fraction = frac(worker_storage_wait);
  res.new_shape_fraction = frac(new_shape);
  res.new_shapes_per_step = res.steps_per_s > 0.0 ? new_shapes / gpus / window / res.steps_per_s : 0.0;
  res.mean_batches_in_flight = in_flight / gpus / window;
  res.mean_batch_latency_s = latency_n > 0 ? latency / latency_n : 0.0;
  res.batches_delivered_per_s = latency_n / gpus / window;
  res.out_of_order_fraction = out_of_order / gpus;
  return res;
}

}  // namespace pipeplan::sim
