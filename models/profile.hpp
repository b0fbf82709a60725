// Profile: a measured machine, as read from a `pipeplan-profile/1` file (docs/profile.md).
// Only what the simulator uses is typed here; raw measurement points are validated and kept.
#pragma once

#include <string>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipeplan {

// Per-core speed relative to one busy core, by the number of busy cores.
struct SpeedPoint {
  double busy_cores = 1.0;
  double relative_speed = 1.0;
};

struct CpuProfile {
  int cores = 16;
  std::vector<SpeedPoint> speed_vs_busy_cores{{1.0, 1.0}};
  double oversubscription_cost = 0.05;
  // The speed one process gets from its core wanders: on the H200 VM a worker's batch time
  // spreads with cv 0.12-0.15 whatever the batch size, each batch like the one before (lag-one
  // correlation 0.63-0.76 at about 0.3 s), nearly independently across workers (validation
  // run 8). Modelled as a stationary process in log speed per worker (Ornstein-Uhlenbeck):
  // `core_speed_cv` its spread, `core_speed_correlation_s` how long a slow or fast spell lasts.
  // Over a 16 s window that leaves workers' mean speeds 4-5% apart, and DataLoader's round
  // robin runs at the slowest one's pace. 0 = steady cores.
  double core_speed_cv = 0.0;
  double core_speed_correlation_s = 1.0;
  // A slower second part of the same wander, independent of the first and added to it in log speed (validation
  // run 39, finding 6: the cases' workers keep their order between the halves of a window more than the one part
  // leaves them). 0 = one part, the model up to the thirty-sixth session. calibrate logs it, not yet writes it.
  double core_speed_slow_cv = 0.0;
  double core_speed_slow_correlation_s = 10.0;
  // The first part's shape, where measured: its log speed's p90 - median (`core_speed_fast_side`) and median - p10
  // (`core_speed_slow_side`), a split normal in log speed in place of the lognormal of core_speed_cv. The workers'
  // batches on the H200 VM are fast-skewed: over the table's 8-worker b64 cases 0.147 against 0.109, fast in 68% of
  // 499 cases (validation run 58, finding 3); a lognormal has the two equal. Both 0 = the lognormal (default).
  double core_speed_fast_side = 0.0;
  double core_speed_slow_side = 0.0;
  // How much the first part's amplitude differs from thread to thread: each thread's cv is core_speed_cv x exp(s z -
  // s^2 / 2), z a standard normal drawn once per thread, s this key (its mean stays core_speed_cv). The workers of a
  // case differ in how much they wander (validation run 58, finding 8: the spread of their own log sds 0.017-0.035
  // measured against 0.004-0.010 simulated). 0 = one cv for all (default).
  double core_speed_cv_spread = 0.0;
  // A worker's wander moves on by its batches instead of by seconds: each part's lag-one from one batch of the worker
  // to its next is exp(-1 / N), N these keys, however long the batch or the wait for its index. The workers' batch
  // times on the H200 VM keep lag-one 0.71 / 0.70 / 0.64 / 0.57 at b16 / b32 / b64 / b128 while a batch lasts 0.08 to
  // 0.65 s (validation run 59, finding 2), where a process in seconds would fall to 0.06. 0 = the part's correlation
  // in seconds (default); the pin and main threads keep seconds.
  double core_speed_correlation_batches = 0.0;
  double core_speed_slow_correlation_batches = 0.0;
  // The share of the workers' wander (of its log variance) that all of a rank's workers share at the same time: a
  // machine-wide spell rather than each core's own. The workers' own parts keep 1 - share of their log variance, and
  // one process per rank (the slower part's memory where there is one, else the first's; by batches or seconds as
  // those keys say) carries the rest. It matters where batches are handed over in order: workers slowing alone
  // overtake one another and the loop waits on the late one, workers slowing together do not (validation run 61,
  // finding 3: same-time pair correlation 0.0-0.4 on one call, and the out-of-order share follows it). 0 = each
  // worker wanders alone (default); the pin and main threads keep their own whole wander.
  double core_speed_common_share = 0.0;
  // The pin_memory thread's own spread, where measured: the cv of its cycle (one pin_memory() call's end to the
  // next) in a pin-bound window, in place of core_speed_cv for that thread's first part (lognormal; the cores'
  // correlation, no per-thread spread or split-normal sides). The cases' pin cycle spreads 0.05-0.18 where the
  // workers' wander from the same probes gave 0.07-0.14, correlation 0.08 between the two over 33 pinned cases
  // (validation-runs.md, "The pin thread's own spread"). Absent = the cores' wander (default).
  std::optional<double> pin_thread_speed_cv{};
};

struct HostProfile {
  double memcpy_bytes_per_s = 1.0e10;
  double pin_copy_bytes_per_s = 8.0e9;
  double host_alloc_s_per_mib = 0.0;
  double host_register_s_per_mib = 0.0;
};

// The GIL-held part of PyTorch's receive of one batch from a worker (unpickling, the shared storage's rebuild):
// 0.48 ms, fitted on the H200 loops' timelines of validation runs 11-40 (129 cases; +0.03 ms on runs 41-62's 70) and
// holding on H100 hosts (runs 64-65). A Python cost calibrate cannot time, so the default where a profile's ipc
// section names neither receive_gil_s_per_batch nor receive_gil_share.
inline constexpr double kPytorchReceiveGilS = 4.8e-4;

struct IpcProfile {
  double receive_s_per_batch = 2.0e-4;
  // The share of receive_s_per_batch the pin thread runs holding the GIL (unpickling, the storage's rebuild); the
  // rest (the pipe read, the fd's socket hand-off) releases it. 1 (default): the whole fixed cost held, as since
  // validation run 38. The held part runs first: the fifty-ninth session's timelines (validation-runs.md run 62,
  // finding 9) show the loop's ops right after the hand-off slowed and those it runs 1-2 ms later (a batch in hand)
  // not. A what-if; receive_gil_s_per_batch, where given, replaces it.
  double receive_gil_share = 1.0;
  // The GIL-held part of a batch's receive in seconds on one idle core; replaces
  // receive_gil_share. receive_s_per_batch is the transport loop's receive less its release at calibrate's per-byte
  // rate, a difference that swings 0.02-3.6 ms from call to call on the same pipeline, where the loop's measured
  // loss to the receive stays 0.5-1.0 ms (run 62, finding 9). Beyond receive_s_per_batch it comes out of the
  // per-byte part, which that difference had charged with it (the pin thread's work stays the same). Unset: the share.
  // An ipc section that gives neither key gets kPytorchReceiveGilS (parse_profile): calibrate times the receive in
  // C++ (about 12 us a batch), which holds no Python lock, so the share of it would hold almost nothing.
  std::optional<double> receive_gil_s_per_batch;
  double receive_s_per_byte = 1.0e-10;
  double shm_write_s_per_byte = 0.0;  // filling fresh shared memory (collate in a worker); 0: not measured
  // Releasing a received batch (munmap + close: the tmpfs pages freed with the last reference, and the page
  // tables of the pages this process touched), per byte; inside receive_s_per_byte, which times the whole
  // receive. calibrate since validation run 16. Run 15 found the unpinned loops paying it after each step
  // (5.6-8.0 ms for a 38.5 MB batch) on top of their fresh-mapping copy.
  std::optional<double> release_s_per_byte;            // the pages touched (by a copy or a read)
  std::optional<double> release_untouched_s_per_byte;  // never touched here (a loop that drops the batch)
  // Whether the pin thread holds the GIL while it releases the worker's batch after pin_memory() (models::
  // pin_receive_parts: release_s). Validation run 72 (finding 5): on the H100 host a loop whose .item() returned
  // during that release waited for its end (7.5-7.9 ms after pin_memory() ended; calibrate's release 6.8 ms), as a
  // GIL-wanting thread would; the harness's GIL probe reads about that hold plus the receive's (1.03x at median over
  // 18 H100 calls, 0.64-1.80x call by call; validation run 73, finding 6). Why (validation run 74,
  // release_gil_probe.py): the shared storage's Python object frees and unmaps the batch in its dealloc, holding the
  // GIL for 0.74-0.99 of that free (3.34 of 3.83 ms and 4.44 of 4.49 ms for 38.5 MB with its pages
  // touched, on two H100 leases). false:
  // the release runs beside the loop, inside the per-byte work before the copy (the model until the seventy-sixth
  // session). A what-if and a check; it needs release_s_per_byte.
  bool release_holds_gil = true;
  // The share of pin_memory()'s one pass (the copy of a fresh mapping into pinned memory) spent faulting the
  // mapping's pages: a touch alone over the fresh copy, at batch sizes (calibrate since the twenty-ninth
  // session). Recorded for the model's check (validation-runs.md, "Calibrate's split of the pin thread's work");
  // the simulator does not read it yet.
  std::optional<double> pin_touch_share;
};

struct ReaderSharePoint {
  double readers = 1.0;
  double relative_rate = 1.0;
};

struct StorageProfile {
  double read_bytes_per_s = 6.0e8;
  double read_iops = 3.0e4;
  double read_latency_s = 1.0e-4;
  // A small file's fixed cost read cold (open, metadata, its first request) beyond its bytes at the stream rate,
  // from calibrate's cold read of 64 KiB files (since the seventeenth session; 0: not measured). A scenario's
  // per-request latency defaults to the larger of this and read_latency_s (validation run 21, finding 7).
  double cold_file_latency_s = 0.0;
  // A worker reads each file with plain, synchronous reads through the page cache: one read in
  // flight, so it waits for the device at its own pace, and the kernel spends CPU filling the page
  // cache (validation run 9, cold tensor case: 0.81 ms of CPU per 602 KB file cold against 0.62
  // warm). Both from calibrate's buffered cold read of one file (0: not measured, no effect).
  double stream_read_bytes_per_s = 0.0;      // one synchronous reader's device-wait rate
  double buffered_read_cpu_s_per_byte = 0.0;  // page-cache fill CPU beyond a warm read's copy
  // Each reader's device-wait rate with N readers at once, relative to one alone's (N = 1: 1), from
  // calibrate's concurrent buffered cold reads (storage.buffered_read.concurrent, since validation run 16;
  // empty: every reader waits at the stream rate). Runs 2-15: four workers' cold reads waited twice as long
  // as one alone's.
  std::vector<ReaderSharePoint> stream_read_vs_readers;
  // The same from readers that work on the CPU after each file, as DataLoader workers decode
  // (storage.buffered_read.concurrent_with_work, since the seventeenth session): on the H200 each waits 3-28% less
  // a byte than back-to-back readers at 2-8 readers (validation run 51, finding 2). Empty: not measured.
  std::vector<ReaderSharePoint> stream_read_vs_readers_with_work;
  // The most bytes a second calibrate's concurrent buffered readers (concurrent, concurrent_with_work) drew from
  // the device while they waited: bytes over the wall less the threads' CPU share. The device delivers at least this,
  // and on the H200 it is up to 1.5x fio's best 1 MiB sequential read (validation run 51, finding 3). 0: not measured.
  double buffered_peak_bytes_per_s = 0.0;
  // The page-cache fill CPU per byte when N forked processes read cold at once (calibrate's
  // storage.buffered_read.concurrent_processes, since validation run 47: (their CPU - the one-thread warm re-read's)
  // / bytes; N = 1 is one process alone). DataLoader workers are processes: the H200's cold tensor workers spent about
  // 1.8x the one-thread figure (validation-runs.md run 47, finding 5), and processes on the build machine 1.2-2.1x where
  // threads paid about 1x. Sorted by N; empty: not measured (workers take buffered_read_cpu_s_per_byte).
  struct ProcessFillPoint {
    double processes = 1.0;
    double cpu_s_per_byte = 0.0;
  };
  std::vector<ProcessFillPoint> fill_cpu_s_per_byte_vs_processes;
};

// The page cache's fill CPU per byte: a cold read's CPU less a warm re-read's of the same bytes (the copy both
// do), never below 0 (0 without bytes). calibrate's storage section writes its measurements; the profile reader
// turns its forked readers' into fill_cpu_s_per_byte_vs_processes with it.
inline double page_cache_fill_cpu_s_per_byte(double cold_cpu_s, double warm_cpu_s, double bytes) {
  return bytes > 0.0 ? (cold_cpu_s > warm_cpu_s ? cold_cpu_s - warm_cpu_s : 0.0) / bytes : 0.0;
}

// The fill CPU per byte for `workers` reading processes: the measured point with the nearest process count (the
// fewer on a tie), or `fallback` (the one-thread figure) where none was measured.
double worker_fill_cpu_s_per_byte(const StorageProfile& storage, int workers, double fallback);

struct RatePoint {
  double bytes = 0.0;
  double bytes_per_s = 0.0;
};

// A size-dependent copy rate: measured points, and a latency + bandwidth fit.
struct CopyCurve {
  double latency_s = 0.0;
  double bytes_per_s = 1.0e10;
  std::vector<RatePoint> points;  // sorted by bytes
};

struct CopyProfile {
  int copy_engines = 2;
  CopyCurve h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable;
  // A pageable H2D copy from a freshly mapped shared-memory segment (an unpinned batch a worker handed
  // over, its first touch inside the copy); calibrate since validation run 15. Absent: the receive's
  // per-byte touch plus h2d_pageable (runs 11-14 found that sum 2-5 ms above the unpinned loops' own).
  std::optional<CopyCurve> h2d_pageable_fresh_mapping;
  double bidirectional_bytes_per_s = 0.0;
  double side_stream_copy_kept = 1.0;
  double side_stream_compute_kept = 1.0;
};

// A GPU step's time at a steady GPU duty, relative to the same step after a long rest (1.0).
struct RelativeDutyPoint {
  double duty = 0.0;
  double relative_time = 1.0;
  // calibrate's p90 step at this duty over the rested step (since run 46's plan: the GPU clock's humps at a high
  // duty widen the step's spread, validation-runs.md run 45, finding 2); 0 where not measured. A record for now.
  double relative_p90_time = 0.0;
};

struct ComputeProfile {
  double bf16_gemm_flops_per_s = 0.0;
  double gemm_kept_with_copy = 1.0;
  double gemm_kept_with_nccl = 1.0;
  // calibrate's GEMM "steps" at duties 0 (isolated) .. 1 (back to back); sorted by duty; empty when
  // not measured. A scenario without its own training.step_s_vs_gpu_duty takes this shape.
  std::vector<RelativeDutyPoint> step_vs_gpu_duty;
  // The time constant of the GPU's busy share, fitted by calibrate to its burst ramp (GEMM steps back to back
  // after a rest) with the shape above (fit_gpu_duty_time_constant); absent: the simulator's 1 s.
  std::optional<double> gpu_duty_time_constant_s;
};

struct CollectiveModel {
  bool present = false;
  double latency_s = 0.0;
  double bus_bytes_per_s = 0.0;
};

struct NcclProfile {
  bool measured = false;
  int gpus = 1;
  CollectiveModel all_reduce, all_gather, reduce_scatter;
  // nccl.inter_node: the same collectives run across nodes (nccl-tests on 2+ nodes, one rank per GPU), for a job of
  // several nodes (scenario cluster.nodes); nodes and gpus: the run's
  struct InterNode {
    int nodes = 0, gpus = 0;
    CollectiveModel all_reduce, all_gather, reduce_scatter;
  } inter_node;
};

struct Profile {
  std::string file;
  nlohmann::json provenance = nlohmann::json::object();
  CpuProfile cpu;
  HostProfile host;
  IpcProfile ipc;
  StorageProfile storage;
  CopyProfile copy;
  ComputeProfile compute;
  NcclProfile nccl;
  std::vector<std::string> fallbacks;  // sections taken from the default profile
};

// Parses and validates. A section missing from `document` is copied whole from `fallback` (when
// given) and named in Profile::fallbacks; a section present is taken whole from `document`, the
// keys it lacks at their documented defaults (never a mix of two machines' measurements). Throws InputError on any bad value.
Profile parse_profile(const nlohmann::json& document, const std::string& file, const Profile* fallback);

}  // namespace pipeplan
