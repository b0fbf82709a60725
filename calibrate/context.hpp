// What every calibration section receives (RunContext) and returns (SectionOutcome).
// Sections report problems as values; only the CLI turns them into exit codes.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipeplan::calibrate {

// How long a run may take: full (<= 5 min on the H200 machine), quick (~1 min), and tiny
// (a few seconds, for tests; selected by PIPEPLAN_CALIBRATE_SCALE=tiny, not a CLI option).
enum class Scale { tiny, quick, full };

// Why a section produced no result.
struct Problem {
  enum class Kind {
    unavailable,  // the machine lacks what it needs (no GPU, built without CUDA): exit 3
    failed,       // it tried and an operation failed: exit 1
    interrupted,  // SIGINT arrived while it ran
  };
  Kind kind = Kind::failed;
  std::string reason;

  static Problem unavailable(std::string why) { return {Kind::unavailable, std::move(why)}; }
  static Problem failed(std::string why) { return {Kind::failed, std::move(why)}; }
  static Problem interrupted() { return {Kind::interrupted, "interrupted"}; }
};

// A value or the reason there is none (an `expected` for C++20).
template <class T>
class Outcome {
 public:
  Outcome(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Outcome(Problem p) : v_(std::move(p)) {}     // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& value() { return std::get<T>(v_); }
  const Problem& problem() const { return std::get<Problem>(v_); }

 private:
  std::variant<T, Problem> v_;
};

// A section's result: top-level profile keys it fills (e.g. {"decode": ..., "cpu": ...}) and
// remarks for provenance.note (method fallbacks a reader should know about).
struct SectionReport {
  nlohmann::json profile_keys = nlohmann::json::object();
  std::vector<std::string> notes;
};
using SectionOutcome = Outcome<SectionReport>;

struct RunContext {
  Scale scale = Scale::full;
  std::filesystem::path storage_path;  // directory for the storage test files
  unsigned cores = 1;                  // online cores
  const std::atomic<bool>* interrupt_flag = nullptr;
  std::function<void(const std::string&)> progress;  // one line to stderr

  bool interrupted() const { return interrupt_flag && interrupt_flag->load(std::memory_order_relaxed); }
  void log(const std::string& line) const {
    if (progress) progress(line);
  }
  // Picks a value by scale.
  template <class T>
  T by_scale(T tiny, T quick, T full) const {
    return scale == Scale::tiny ? tiny : scale == Scale::quick ? quick : full;
  }
};

// Monotonic seconds, for host-clock timing.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// printf-style formatting for progress lines (GCC 12 has no <format>).
__attribute__((format(printf, 1, 2))) inline std::string strf(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

}  // namespace pipeplan::calibrate
