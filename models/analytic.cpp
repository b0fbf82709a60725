#include "models/analytic.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "models/collectives.hpp"
#include "models/cost_models.hpp"

namespace pipeplan {

namespace {
constexpr double kUnbounded = std::numeric_limits<double>::infinity();
double per_batch(double batch, double seconds) { return seconds > 0.0 ? batch / seconds : kUnbounded; }
}  // namespace

double worker_collate_s(const Scenario& s, const Profile& p, double bytes) {
  // a measured collate scales with the batch's bytes (a short last batch, a sequence batch's padded shape)
  const double measured_s = s.loader.collate_s_per_batch ? *s.loader.collate_s_per_batch * (bytes / s.batch_bytes())
                                                         : bytes / p.host.memcpy_bytes_per_s;
  if (s.loader.num_workers == 0) return measured_s;  // inline: plain memory, no shared segment
  // timed in a worker, into shared memory: the segment's first writes are already in it
  if (s.loader.collate_s_per_batch && s.loader.collate_in_shared_memory) return measured_s;
  return std::max(measured_s, bytes * p.ipc.shm_write_s_per_byte);
}

int input_threads(const Scenario& s) {
  const int per_rank = std::max(1, s.loader.num_workers) + (s.loader.num_workers > 0 ? 1 : 0) +
                       (s.loader.pin_memory && s.loader.num_workers > 0 ? 1 : 0);
  return per_rank * s.node.gpus;
}

namespace {

// Threads competing for the cores when the workers run flat out and the main and pin threads
// run at the GPU's pace: each of those counts by the share of a step it is busy.
double effective_input_threads(const Scenario& s, const Profile& p) {
  if (s.loader.num_workers == 0) return s.node.gpus;
  const double bytes = s.batch_bytes();
  const double step_s = s.training.step_s() * s.mean_step_factor() + s.gpu_decode_s();
  const double receive_s = p.ipc.receive_s_per_batch + bytes * p.ipc.receive_s_per_byte;
  double others = 0.0;
  if (s.loader.pin_memory) {
    others += std::min(1.0, (receive_s + bytes / p.host.pin_copy_bytes_per_s) / step_s);  // pin thread
    others += std::min(1.0, s.loop_thread_s() / step_s);                               // main thread
  } else {
    others += std::min(1.0, (unpinned_receive_s(p, bytes) + s.loop_thread_s()) / step_s);
  }
  return s.node.gpus * (s.loader.num_workers + others);
}

// cpu_capacity_cores between whole thread counts.
double capacity_cores(const Profile& p, int cores, double threads) {
  const int lo = static_cast<int>(threads);
  const double a = cpu_capacity_cores(p.cpu, cores, lo), b = cpu_capacity_cores(p.cpu, cores, lo + 1);
  return a + (threads - lo) * (b - a);
}

}  // namespace

std::vector<StageCapacity> stage_capacities(const Scenario& s, const Profile& p) {
  std::vector<StageCapacity> out;
  const double gpus = s.node.gpus;
  const double batch = s.mean_samples_per_batch();
  const double bytes = s.batch_bytes();
  const double threads = effective_input_threads(s, p);
  const double share = threads > 0 ? capacity_cores(p, s.node.cpu_cores, threads) / threads : 1.0;
  const double collate_s = worker_collate_s(s, p, bytes);
  // A dataset measured with its own speed curve: its load slows by that curve, not the machine's.
  double load_factor = 1.0;
  if (!s.dataset.load_speed_vs_busy_cores.empty()) {
    const double busy = std::min(input_threads(s), s.node.cpu_cores);
    load_factor = relative_core_speed(p.cpu.speed_vs_busy_cores, busy) /
                  relative_core_speed(s.dataset.load_speed_vs_busy_cores, busy);
  }
  // one batch, one idle core (inline loading has no worker loop around it)
  // a cold read costs the reader kernel CPU (page-cache fill) and, one read in flight, a wait of its
  // own at the stream rate (storage.buffered_read_cpu_s_per_byte, stream_read_bytes_per_s)
  const double miss = 1.0 - s.storage.page_cache_hit_ratio;
  const double read_bytes = batch * s.dataset.sample_bytes.mean * std::max(miss, 0.0);
  const double tokenize_s = s.sequence.enabled ? s.sequence_mean.load_tokens * s.sequence.load_s_per_token : 0.0;
  const double load_cpu_s = (batch * s.dataset.load_s_per_sample.mean + tokenize_s) * load_factor + collate_s +
                            read_bytes * s.storage.buffered_read_cpu_s_per_byte +
                            (s.loader.num_workers > 0 ? s.loader.worker_s_per_batch : 0.0);
  // a file's open waits one metadata round trip, cached or not (storage.open_latency_s), without a core
  const double read_wait_s = (s.storage.stream_read_bytes_per_s > 0.0 ? read_bytes / s.storage.stream_read_bytes_per_s : 0.0) +
                             batch * s.opens_per_sample() * s.storage.open_latency_s;
  const double ipc_s = pin_receive_parts(p, bytes).total_s();  // the pin thread's receive (the main thread's below)
  const double pin_s = bytes / p.host.pin_copy_bytes_per_s;

  if (miss > 0.0) {
    const double by_bandwidth = s.storage.read_bytes_per_s / (s.dataset.sample_bytes.mean * miss);
    const double by_iops = s.storage.read_iops / miss;
    out.push_back({"storage", std::min(by_bandwidth, by_iops)});
  }
  // every sample's file is opened, cached or not: the metadata server's opens a second over the opens a sample
  if (s.storage.metadata_ops_per_s > 0.0) out.push_back({"metadata", s.storage.metadata_ops_per_s / s.opens_per_sample()});
  if (s.loader.num_workers > 0) {
    // (the cores' wandering speed, cpu.core_speed_cv, is left to the simulation: its cost
    // depends on the round robin's dynamics, not on a capacity)
    out.push_back({"workers", gpus * s.loader.num_workers * per_batch(batch, load_cpu_s / share + read_wait_s)});
    if (s.loader.pin_memory) {
      const double pin_thread_s = (ipc_s + pin_s) / share + s.loader.pin_thread_wait_s_per_batch;  // the wait holds no core
      out.push_back({"pin_thread", gpus * per_batch(batch, pin_thread_s)});
    } else {
      out.push_back({"main_receive", gpus * per_batch(batch, unpinned_receive_s(p, bytes) / share)});
    }
  } else {
    out.push_back({"main_inline_load",
                   gpus * per_batch(batch, (load_cpu_s + (s.loader.pin_memory ? pin_s : 0.0)) / share + read_wait_s)});
  }
  // The loop's Python holds the GIL, and so does the pin thread for a batch's receive (unpickling): one
  // interpreter lock serves both. The loop also stalls while the pin thread touches and unmaps the worker's
  // mapping when it keeps needing the process's memory map (validation run 17). A busy loop's capacity is what
  // both leave it.
  const bool pin_thread = s.loader.pin_memory && s.loader.num_workers > 0;
  const double pin_gil_s = pin_thread ? receive_gil_held_s(p) : 0.0;
  const double pin_map_s =
      pin_thread && s.training.host_needs_memory_map
          ? memory_map_stall_s(bytes * p.ipc.receive_s_per_byte,
                               memory_map_interval_s(s.training.host_s_per_step, s.training.memory_map_needs_per_step),
                               s.training.memory_map_wait_s)
          : 0.0;
  // A sync every k steps also waits, once in k, for the kernels launched last (training.launch_tail_s).
  if (s.loop_thread_s() > 0.0)
    out.push_back({"host_loop", gpus * per_batch(batch, (s.host_bound_loop_thread_s() + pin_gil_s + pin_map_s) / share +
                                                            s.sync_tail_s_per_step())});
  out.push_back({"h2d_copy", gpus * per_batch(batch, h2d_batch_copy_s(p, bytes, s.loader.pin_memory,
                                                                        s.loader.num_workers > 0))});
  // the GPU runs the batch's JPEG decode too where the loop decodes on it (training.gpu_decode_s_per_sample)
  out.push_back({"gpu_compute", gpus * per_batch(batch, s.training.saturated_step_s() * s.mean_step_factor() +
                                                            s.gpu_decode_s())});
  const NcclProfile collectives = job_collectives(s, p);
  // on one node the comm stage's capacity is named only from a measured all-reduce (the simulator runs the
  // placeholder; the report shows no capacity for it); across nodes the network's figures are always given
  if (s.all_reduces_gradients() && (s.cluster.nodes > 1 || p.nccl.all_reduce.present)) {
    double comm_s = 0.0;
    for (double b : s.ddp.bucket_bytes())
      comm_s += collective_time_s(collectives.all_reduce, b, all_reduce_bus_factor(s.world_size()));
    out.push_back({"comm", gpus * per_batch(batch, comm_s)});
  }
  // FSDP's collectives a step, one after another on NCCL's stream: their sum bounds the step when none is hidden
  if (s.shards_parameters())
    out.push_back({"comm", gpus * per_batch(batch, fsdp_comm_s_per_step(s.fsdp, collectives, s.world_size()))});
  return out;
}

}  // namespace pipeplan
