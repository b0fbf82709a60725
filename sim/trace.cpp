#include "sim/trace.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "models/atomic_file.hpp"

namespace pipeplan::sim {

void TraceRecorder::name_process(int pid, const std::string& name, int sort_index) {
  if (enabled_) meta_.push_back({pid, -1, name, sort_index});
}

void TraceRecorder::name_thread(int pid, int tid, const std::string& name, int sort_index) {
  if (enabled_) meta_.push_back({pid, tid, name, sort_index});
}

void TraceRecorder::span(int pid, int tid, const char* name, double start_s, double end_s, std::int64_t batch) {
  if (!enabled() || end_s < start_s) return;
  events_.push_back({'X', pid, tid, name, start_s, end_s - start_s, 0.0, batch});
}

void TraceRecorder::span(int pid, int tid, const std::string& name, double start_s, double end_s, std::int64_t batch) {
  if (!enabled() || end_s < start_s) return;
  span(pid, tid, names_.insert(name).first->c_str(), start_s, end_s, batch);
}

void TraceRecorder::counter(int pid, const char* name, double at_s, double value) {
  if (!enabled()) return;
  events_.push_back({'C', pid, 0, name, at_s, 0.0, value, -1});
}

namespace {
// Microseconds (the trace's unit) rounded to the nanosecond, the precision the file prints.
double round_to_ns_in_us(double us) { return std::round(us * 1e3) / 1e3; }
}  // namespace

std::string TraceRecorder::write(const std::string& path) const {
  // Streamed by hand: a million events through nlohmann's DOM would cost seconds.
  std::string out;
  out.reserve(events_.size() * 96 + 4096);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"pipeplan simulate\"},\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() {
    if (!first) out += ",\n";
    first = false;
  };
  char buf[512];
  for (const auto& m : meta_) {
    const std::string name = nlohmann::json(m.name).dump();
    sep();
    if (m.tid < 0) {
      std::snprintf(buf, sizeof buf, R"({"ph":"M","pid":%d,"name":"process_name","args":{"name":%s}})", m.pid, name.c_str());
      out += buf;
      out += ",\n";
      std::snprintf(buf, sizeof buf, R"({"ph":"M","pid":%d,"name":"process_sort_index","args":{"sort_index":%d}})", m.pid, m.sort_index);
    } else {
      std::snprintf(buf, sizeof buf, R"({"ph":"M","pid":%d,"tid":%d,"name":"thread_name","args":{"name":%s}})", m.pid, m.tid, name.c_str());
      out += buf;
      out += ",\n";
      std::snprintf(buf, sizeof buf, R"({"ph":"M","pid":%d,"tid":%d,"name":"thread_sort_index","args":{"sort_index":%d}})", m.pid, m.tid, m.sort_index);
    }
    out += buf;
  }
  for (const auto& e : events_) {
    sep();
    if (e.phase == 'X') {
      // Start and end rounded to the nanosecond each, the duration their difference: a span that ends where the next
      // one starts, or where its parent ends, then does so in the file too (rounding ts and dur apart could leave a
      // child 1 ns past its parent, which Perfetto reads as a broken nesting).
      const double ts_us = round_to_ns_in_us(e.ts_s * 1e6);
      const double dur_us = round_to_ns_in_us((e.ts_s + e.dur_s) * 1e6) - ts_us;
      if (e.batch >= 0)
        std::snprintf(buf, sizeof buf, R"({"ph":"X","pid":%d,"tid":%d,"name":"%s","ts":%.3f,"dur":%.3f,"args":{"batch":%lld}})",
                      e.pid, e.tid, e.name, ts_us, dur_us, static_cast<long long>(e.batch));
      else
        std::snprintf(buf, sizeof buf, R"({"ph":"X","pid":%d,"tid":%d,"name":"%s","ts":%.3f,"dur":%.3f})", e.pid, e.tid,
                      e.name, ts_us, dur_us);
    } else {
      std::snprintf(buf, sizeof buf, R"({"ph":"C","pid":%d,"name":"%s","ts":%.3f,"args":{"value":%.6g}})", e.pid, e.name,
                    e.ts_s * 1e6, e.value);
    }
    out += buf;
  }
  out += "\n]}\n";
  return write_file_atomically(path, out);
}

}  // namespace pipeplan::sim
