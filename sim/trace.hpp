// TraceRecorder: Chrome Trace Event JSON that Perfetto and chrome://tracing open.
// One process per rank, one thread (track) per worker, thread and stream, so events on a
// track never overlap; counters for batches in flight and pinned bytes.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace pipeplan::sim {

class TraceRecorder {
 public:
  explicit TraceRecorder(bool enabled, std::size_t max_events = 4'000'000) : enabled_(enabled), max_events_(max_events) {}

  bool enabled() const { return enabled_ && events_.size() < max_events_; }
  void name_process(int pid, const std::string& name, int sort_index);
  void name_thread(int pid, int tid, const std::string& name, int sort_index);
  // A span [start_s, end_s) on track (pid, tid). `name` must outlive the recorder (a string literal); a name built
  // at run time goes through the std::string overload, which keeps one copy of each distinct name.
  void span(int pid, int tid, const char* name, double start_s, double end_s, std::int64_t batch = -1);
  void span(int pid, int tid, const std::string& name, double start_s, double end_s, std::int64_t batch = -1);
  void counter(int pid, const char* name, double at_s, double value);
  bool truncated() const { return events_.size() >= max_events_; }

  // Writes atomically (a temporary file renamed into place). Returns an error text or "".
  std::string write(const std::string& path) const;

 private:
  struct Event {
    char phase;  // 'X' span, 'C' counter
    int pid, tid;
    const char* name;
    double ts_s, dur_s, value;
    std::int64_t batch;
  };
  struct Meta {
    int pid, tid;  // tid < 0: process metadata
    std::string name;
    int sort_index;
  };
  bool enabled_;
  std::size_t max_events_;
  std::vector<Event> events_;
  std::vector<Meta> meta_;
  std::unordered_set<std::string> names_;  // run-time names; a node-based set keeps their addresses stable
};

}  // namespace pipeplan::sim
