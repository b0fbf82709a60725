#include "models/profile.hpp"

#include <algorithm>
#include <cmath>

#include "models/input_error.hpp"
#include "models/json_reader.hpp"

namespace pipeplan {

namespace {

// Points are measurements kept for people and refits: validated for shape, not used.
void check_points(ObjectReader& r, const std::string& key, const std::vector<std::string>& allowed) {
  for (auto& p : r.array_of_objects(key)) {
    for (const auto& k : allowed) p.raw(k);
    p.finish();
  }
}

CopyCurve read_curve(ObjectReader& parent, const std::string& key, const CopyCurve& fallback) {
  if (!parent.has(key)) {
    parent.raw(key);
    return fallback;
  }
  ObjectReader r = parent.object(key);
  CopyCurve c;
  c.latency_s = r.number("latency_s", 0.0, Range::between(0, 1));
  c.bytes_per_s = r.required_number("bytes_per_s", Range::positive());
  r.number("rel_rmse", 0.0, Range::non_negative());
  for (auto& p : r.array_of_objects("points")) {
    RatePoint q;
    q.bytes = p.required_number("bytes", Range::positive());
    q.bytes_per_s = p.required_number("bytes_per_s", Range::positive());
    p.raw("time_s");
    p.finish();
    c.points.push_back(q);
  }
  std::sort(c.points.begin(), c.points.end(), [](const RatePoint& a, const RatePoint& b) { return a.bytes < b.bytes; });
  // Equal sizes would make interpolation divide by zero: keep the last of each size.
  c.points.erase(std::unique(c.points.begin(), c.points.end(),
                             [](const RatePoint& a, const RatePoint& b) { return a.bytes == b.bytes; }),
                 c.points.end());
  r.finish();
  return c;
}

CollectiveModel read_collective(ObjectReader& parent, const std::string& key) {
  CollectiveModel m;
  if (!parent.has(key)) {
    parent.raw(key);
    return m;
  }
  ObjectReader r = parent.object(key);
  m.present = true;
  m.latency_s = r.number("latency_s", 0.0, Range::between(0, 10));
  m.bus_bytes_per_s = r.required_number("bus_bytes_per_s", Range::positive());
  r.number("rel_rmse", 0.0, Range::non_negative());
  check_points(r, "points", {"bytes", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s"});
  r.finish();
  return m;
}

}  // namespace

Profile parse_profile(const json& document, const std::string& file, const Profile* fallback) {
  Profile p = fallback ? *fallback : Profile{};
  p.file = file;
  p.fallbacks.clear();
  ObjectReader top(document, file, "");
  top.choice("schema", "pipeplan-profile/1", {"pipeplan-profile/1"});
  if (const json* prov = top.raw("provenance")) {
    if (!prov->is_object()) top.fail("provenance", *prov, "an object");
    p.provenance = *prov;
  } else {
    p.provenance = json::object();
  }
  auto missing = [&](const std::string& section) {
    if (top.has(section)) return false;
    top.raw(section);
    if (fallback) p.fallbacks.push_back(section);
    return true;
  };

  if (!missing("cpu")) {
    p.cpu = CpuProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("cpu");
    p.cpu.cores = static_cast<int>(r.integer("cores", p.cpu.cores, Range::between(1, 4096)));
    auto points = r.array_of_objects("speed_vs_busy_cores");
    if (!points.empty()) {
      p.cpu.speed_vs_busy_cores.clear();
      for (auto& q : points) {
        SpeedPoint s;
        s.busy_cores = q.required_number("busy_cores", Range::at_least(1));
        s.relative_speed = q.required_number("relative_speed", Range::between(0.01, 10.0));
        q.finish();
        p.cpu.speed_vs_busy_cores.push_back(s);
      }
      std::sort(p.cpu.speed_vs_busy_cores.begin(), p.cpu.speed_vs_busy_cores.end(),
                [](const SpeedPoint& a, const SpeedPoint& b) { return a.busy_cores < b.busy_cores; });
    }
    p.cpu.oversubscription_cost = r.number("oversubscription_cost", p.cpu.oversubscription_cost, Range::between(0, 100));
    p.cpu.core_speed_cv = r.number("core_speed_cv", p.cpu.core_speed_cv, Range::between(0, 2));
    p.cpu.core_speed_correlation_s =
        r.number("core_speed_correlation_s", p.cpu.core_speed_correlation_s, Range::between(0, 3600));
    p.cpu.core_speed_slow_cv = r.number("core_speed_slow_cv", p.cpu.core_speed_slow_cv, Range::between(0, 2));
    p.cpu.core_speed_slow_correlation_s =
        r.number("core_speed_slow_correlation_s", p.cpu.core_speed_slow_correlation_s, Range::between(0, 3600));
    p.cpu.core_speed_fast_side = r.number("core_speed_fast_side", p.cpu.core_speed_fast_side, Range::between(0, 2));
    p.cpu.core_speed_slow_side = r.number("core_speed_slow_side", p.cpu.core_speed_slow_side, Range::between(0, 2));
    p.cpu.core_speed_cv_spread = r.number("core_speed_cv_spread", p.cpu.core_speed_cv_spread, Range::between(0, 3));
    p.cpu.core_speed_correlation_batches =
        r.number("core_speed_correlation_batches", p.cpu.core_speed_correlation_batches, Range::between(0, 1e6));
    p.cpu.core_speed_slow_correlation_batches = r.number(
        "core_speed_slow_correlation_batches", p.cpu.core_speed_slow_correlation_batches, Range::between(0, 1e6));
    p.cpu.core_speed_common_share =
        r.number("core_speed_common_share", p.cpu.core_speed_common_share, Range::between(0, 0.95));
    p.cpu.pin_thread_speed_cv = r.optional_number("pin_thread_speed_cv", Range::between(0, 2));
    r.finish();
  }
  if (!missing("host")) {
    p.host = HostProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("host");
    p.host.memcpy_bytes_per_s = r.number("memcpy_bytes_per_s", p.host.memcpy_bytes_per_s, Range::bytes_per_s());
    p.host.pin_copy_bytes_per_s = r.number("pin_copy_bytes_per_s", p.host.pin_copy_bytes_per_s, Range::bytes_per_s());
    p.host.host_alloc_s_per_mib = r.number("host_alloc_s_per_mib", p.host.host_alloc_s_per_mib, Range::non_negative());
    p.host.host_register_s_per_mib = r.number("host_register_s_per_mib", p.host.host_register_s_per_mib, Range::non_negative());
    check_points(r, "points", {"what", "bytes", "bytes_per_s", "s"});
    check_points(r, "memcpy_scaling", {"threads", "bytes_per_s", "relative_speed"});
    r.finish();
  }
  if (!missing("ipc")) {
    p.ipc = IpcProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("ipc");
    p.ipc.receive_s_per_batch = r.number("receive_s_per_batch", p.ipc.receive_s_per_batch, Range::between(0, 10));
    p.ipc.receive_gil_share = r.number("receive_gil_share", p.ipc.receive_gil_share, Range::between(0, 1));
    p.ipc.receive_gil_s_per_batch = r.optional_number("receive_gil_s_per_batch", Range::between(0, 10));
    // neither key: PyTorch's measured hold, not the share of calibrate's C++ receive (profile.hpp)
    if (!r.has("receive_gil_s_per_batch") && !r.has("receive_gil_share"))
      p.ipc.receive_gil_s_per_batch = kPytorchReceiveGilS;
    p.ipc.receive_s_per_byte = r.number("receive_s_per_byte", p.ipc.receive_s_per_byte, Range::between(0, 1));
    p.ipc.shm_write_s_per_byte = r.number("shm_write_s_per_byte", p.ipc.shm_write_s_per_byte, Range::between(0, 1));
    p.ipc.release_s_per_byte = r.optional_number("release_s_per_byte", Range::between(0, 1));
    p.ipc.release_untouched_s_per_byte = r.optional_number("release_untouched_s_per_byte", Range::between(0, 1));
    p.ipc.release_holds_gil = r.boolean("release_holds_gil", p.ipc.release_holds_gil);
    check_points(r, "points", {"bytes", "s", "release_s", "release_untouched_s"});
    check_points(r, "shm_write_points", {"bytes", "s"});
    p.ipc.pin_touch_share = r.optional_number("pin_touch_share", Range::between(0, 10));
    check_points(r, "pin_split_points", {"bytes", "touch_s", "fresh_copy_s", "touched_copy_s"});
    r.finish();
  }
  if (!missing("storage")) {
    p.storage = StorageProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("storage");
    r.string("path", "");
    r.choice("engine", "pread", {"io_uring", "pread"});
    r.string("cache_bypass", "");
    p.storage.read_bytes_per_s = r.number("read_bytes_per_s", p.storage.read_bytes_per_s, Range::bytes_per_s());
    p.storage.read_iops = r.number("read_iops", p.storage.read_iops, Range::operations_per_s());
    p.storage.read_latency_s = r.number("read_latency_s", p.storage.read_latency_s, Range::between(0, 10));
    p.storage.cold_file_latency_s =
        r.number("cold_file_latency_s", p.storage.cold_file_latency_s, Range::between(0, 10));
    p.storage.stream_read_bytes_per_s = read_rate_cap_bytes_per_s(r, "stream_read_bytes_per_s", p.storage.stream_read_bytes_per_s);
    p.storage.buffered_read_cpu_s_per_byte =
        r.number("buffered_read_cpu_s_per_byte", p.storage.buffered_read_cpu_s_per_byte, Range::between(0, 1e-3));
    if (r.has("buffered_read")) {
      ObjectReader b = r.object("buffered_read");
      for (const char* k : {"bytes", "files", "file_bytes", "read_size", "cold_s", "cold_cpu_s", "warm_s", "warm_cpu_s",
                            "small_files"})
        b.raw(k);
      // Concurrent cold reads (since run 16): each thread's wait rate, bytes / threads over the wall less its
      // share of the CPU, relative to the one-thread stream rate.
      // The work's CPU is in cpu_s, so the wait leaves it out as it leaves out the copy's.
      auto reader_share_curve = [&](const char* key, std::vector<ReaderSharePoint>& curve) {
        curve.clear();
        if (p.storage.stream_read_bytes_per_s > 0.0) curve.push_back({1.0, 1.0});
        for (auto& q : b.array_of_objects(key)) {
          const double threads = q.number("threads", 0.0, Range::positive());
          const double bytes = q.number("bytes", 0.0, Range::between(0.0, 1e15));
          const double wall_s = q.number("wall_s", 0.0, Range::non_negative());
          const double cpu_s = q.number("cpu_s", 0.0, Range::non_negative());
          q.raw("work_s_per_file");
          q.raw("readers_in_flight_mean");
          q.finish();
          const double wait_s = wall_s - cpu_s / threads;
          if (bytes > 0.0 && wait_s > 0.0 && !Range::bytes_per_s().contains(bytes / wait_s))
            q.fail("wall_s", wall_s,
                   "a wall time giving the readers 1 B/s to 1 PB/s together (bytes / (wall_s - cpu_s / threads))");
          if (bytes > 0.0 && wait_s > 0.0)
            p.storage.buffered_peak_bytes_per_s = std::max(p.storage.buffered_peak_bytes_per_s, bytes / wait_s);
          if (p.storage.stream_read_bytes_per_s > 0.0 && threads > 1.0 && bytes > 0.0 && wait_s > 0.0 &&
              threads > curve.back().readers)
            curve.push_back({threads, bytes / threads / wait_s / p.storage.stream_read_bytes_per_s});
        }
        if (curve.size() < 2) curve.clear();
      };
      p.storage.buffered_peak_bytes_per_s = 0.0;
      reader_share_curve("concurrent", p.storage.stream_read_vs_readers);
      reader_share_curve("concurrent_with_work", p.storage.stream_read_vs_readers_with_work);
      b.raw("concurrent_in_order");  // the written order beside the shuffled one (seventeenth session): not an input
      b.raw("pause_sweep");  // 1 and 4 readers with 0-2 ms of work between files (forty-sixth session): not an input
      b.raw("pause_sweep_jittered");  // 4 readers, work drawn file by file (forty-seventh session): not an input
      b.raw("pause_sweep_head_first");  // np.load's two requests a file (forty-eighth session): not an input
      p.storage.fill_cpu_s_per_byte_vs_processes.clear();
      if (b.has("concurrent_processes")) {
        // against the one-thread warm re-read of the same files (its CPU is the copy every read pays)
        const double warm_cpu_s = b.number("warm_cpu_s", 0.0, Range::non_negative());
        for (auto& q : b.array_of_objects("concurrent_processes")) {
          const double processes = q.number("processes", 0.0, Range::positive());
          const double bytes = q.number("bytes", 0.0, Range::between(0.0, 1e15));
          q.number("wall_s", 0.0, Range::non_negative());
          const double cpu_s = q.number("cpu_s", 0.0, Range::non_negative());
          q.finish();
          if (bytes > 0.0) {
            const double fill_cpu_s_per_byte = page_cache_fill_cpu_s_per_byte(cpu_s, warm_cpu_s, bytes);
            if (!(fill_cpu_s_per_byte <= 1e-3))  // the scenario key's own bound
              q.fail("bytes", bytes, "bytes giving at most 1e-3 CPU s per byte beyond the warm read ((cpu_s - warm_cpu_s) / bytes)");
            p.storage.fill_cpu_s_per_byte_vs_processes.push_back({processes, fill_cpu_s_per_byte});
          }
        }
        std::sort(p.storage.fill_cpu_s_per_byte_vs_processes.begin(), p.storage.fill_cpu_s_per_byte_vs_processes.end(),
                  [](const auto& a, const auto& c) { return a.processes < c.processes; });
      }
      b.finish();
    }
    for (auto& q : r.array_of_objects("points")) {
      for (const char* k : {"rw", "bs", "numjobs", "iodepth", "bw_bytes", "iops", "runtime_s", "io_bytes"}) q.raw(k);
      if (q.has("clat_ns")) {
        ObjectReader c = q.object("clat_ns");
        for (const char* k : {"mean", "p50", "p90", "p99", "max"}) c.raw(k);
        c.finish();
      } else {
        q.raw("clat_ns");
      }
      q.finish();
    }
    r.finish();
  }
  if (!missing("decode")) {
    ObjectReader r = top.object("decode");
    check_points(r, "cpu_jpeg", {"width", "height", "bytes", "s_per_image", "quality"});
    check_points(r, "cpu_jpeg_scaling", {"threads", "images_per_s", "relative_speed", "images_per_s_per_thread",
                                         "rate_cv_across_threads"});
    check_points(r, "gpu_nvjpeg", {"width", "height", "bytes", "batch", "images_per_s", "s_per_image",
                                   "batched_s_per_image"});  // a record (calibrate's nvJPEG decode), not simulated
    check_points(r, "cpu_jpeg_one_thread_per_cpu", {"cpu", "images_per_s"});   // a record, not simulated
    r.raw("cpu_jpeg_per_cpu_round_correlation");
    r.finish();
  }
  if (!missing("copy")) {
    p.copy = CopyProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("copy");
    p.copy.copy_engines = static_cast<int>(r.integer("copy_engines", p.copy.copy_engines, Range::between(0, 64)));
    const CopyProfile defaults = p.copy;
    p.copy.h2d_pinned = read_curve(r, "h2d_pinned", defaults.h2d_pinned);
    p.copy.h2d_pageable = read_curve(r, "h2d_pageable", defaults.h2d_pageable);
    if (r.has("h2d_pageable_fresh_mapping"))
      p.copy.h2d_pageable_fresh_mapping = read_curve(r, "h2d_pageable_fresh_mapping", defaults.h2d_pageable);
    else
      r.raw("h2d_pageable_fresh_mapping");
    p.copy.d2h_pinned = read_curve(r, "d2h_pinned", defaults.d2h_pinned);
    p.copy.d2h_pageable = read_curve(r, "d2h_pageable", defaults.d2h_pageable);
    p.copy.bidirectional_bytes_per_s =
        r.number("bidirectional_bytes_per_s", p.copy.bidirectional_bytes_per_s, Range::non_negative());
    if (r.has("overlap")) {
      ObjectReader o = r.object("overlap");
      p.copy.side_stream_copy_kept = o.number("side_stream_copy_kept", 1.0, {0.0, 1.5, true});
      p.copy.side_stream_compute_kept = o.number("side_stream_compute_kept", 1.0, {0.0, 1.5, true});
      o.boolean("default_stream_serialized", true);
      o.finish();
    } else {
      r.raw("overlap");
    }
    r.finish();
  }
  if (!missing("compute")) {
    p.compute = ComputeProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("compute");
    p.compute.bf16_gemm_flops_per_s = r.number("bf16_gemm_flops_per_s", 0.0, Range::non_negative());
    p.compute.gemm_kept_with_copy = r.number("gemm_kept_with_copy", 1.0, {0.0, 1.5, true});
    p.compute.gemm_kept_with_nccl = r.number("gemm_kept_with_nccl", 1.0, {0.0, 1.5, true});
    for (auto& q : r.array_of_objects("step_vs_gpu_duty")) {
      const double duty = q.required_number("duty", Range::unit_interval());
      const double rel = q.required_number("relative_time", Range::between(0.1, 10.0));
      double rel_p90 = 0.0;
      if (q.has("relative_p90_time")) {  // a p90 below the point's median cannot come from one set of steps
        rel_p90 = q.required_number("relative_p90_time", Range::between(0.1, 10.0));
        if (rel_p90 < rel) q.fail("relative_p90_time", rel_p90, "a number at least the point's relative_time");
      }
      q.finish();
      p.compute.step_vs_gpu_duty.push_back({duty, rel, rel_p90});
    }
    std::sort(p.compute.step_vs_gpu_duty.begin(), p.compute.step_vs_gpu_duty.end(),
              [](const RelativeDutyPoint& a, const RelativeDutyPoint& b) { return a.duty < b.duty; });
    if (r.has("gpu_duty_time_constant_s"))
      p.compute.gpu_duty_time_constant_s = r.number("gpu_duty_time_constant_s", 1.0, Range::between(0.001, 3600));
    else
      r.raw("gpu_duty_time_constant_s");
    check_points(r, "step_burst_after_rest", {"position", "relative_time"});  // calibrate's record of the ramp
    r.finish();
  }
  if (!missing("nccl")) {
    p.nccl = NcclProfile{};  // a section in the file is taken whole: keys it lacks take their documented defaults
    ObjectReader r = top.object("nccl");
    p.nccl.measured = r.boolean("measured", false);
    r.string("reason", "");
    r.string("version", "");
    p.nccl.gpus = static_cast<int>(r.integer("gpus", 1, Range::between(0, 4096)));
    p.nccl.all_reduce = read_collective(r, "all_reduce");
    p.nccl.all_gather = read_collective(r, "all_gather");
    p.nccl.reduce_scatter = read_collective(r, "reduce_scatter");
    if (r.has("inter_node")) {
      ObjectReader q = r.object("inter_node");
      auto& x = p.nccl.inter_node;
      x.nodes = static_cast<int>(q.integer("nodes", 2, Range::between(2, 100000)));
      x.gpus = static_cast<int>(q.integer("gpus", x.nodes, Range::between(x.nodes, 1.0e7)));
      q.string("source", "");
      x.all_reduce = read_collective(q, "all_reduce");
      x.all_gather = read_collective(q, "all_gather");
      x.reduce_scatter = read_collective(q, "reduce_scatter");
      if (!x.all_reduce.present && !x.all_gather.present && !x.reduce_scatter.present)
        q.fail("all_reduce", json(nullptr), "at least one of all_reduce, all_gather, reduce_scatter measured across nodes");
      q.finish();
    } else {
      r.raw("inter_node");
    }
    r.finish();
  }
  top.finish();
  return p;
}

double worker_fill_cpu_s_per_byte(const StorageProfile& storage, int workers, double fallback) {
  const auto& pts = storage.fill_cpu_s_per_byte_vs_processes;
  if (pts.empty() || workers < 1) return fallback;
  const StorageProfile::ProcessFillPoint* best = &pts.front();
  for (const auto& q : pts)  // sorted: the first of equally near points is the fewer processes
    if (std::abs(q.processes - workers) < std::abs(best->processes - workers)) best = &q;
  return best->cpu_s_per_byte;
}

}  // namespace pipeplan
