// ObjectReader: strict, path-aware reading of one JSON object.
//
// Every accessor names the key it reads; finish() rejects any key nobody read, suggesting
// the nearest known one. All failures throw InputError with file, dotted path, the bad value
// and the expectation, so every input file gets the same one-line diagnostics.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/input_error.hpp"

namespace pipeplan {

using json = nlohmann::json;

// A closed or open numeric interval used in "expected ..." messages.
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;

  static Range positive() { return {0.0, std::numeric_limits<double>::infinity(), true}; }
  static Range non_negative() { return {0.0, std::numeric_limits<double>::infinity(), false}; }
  static Range unit_interval() { return {0.0, 1.0, false}; }
  static Range at_least(double lo) { return {lo, std::numeric_limits<double>::infinity(), false}; }
  static Range between(double lo, double hi) { return {lo, hi, false}; }
  // Physical bounds, wide enough for any real job or machine and narrow enough that the simulator's products and
  // quotients of them stay finite (an unbounded 1e300 once reached SimGrid as an infinite duration and aborted it).
  static Range bytes() { return {0.0, 1e15, true}; }               // (0, 1 PB]
  static Range seconds() { return {0.0, 3600.0, true}; }          // (0, 1 h]: one sample's or one step's cost
  static Range bytes_per_s() { return {1.0, 1e15, false}; }       // 1 B/s .. 1 PB/s
  static Range operations_per_s() { return {1e-3, 1e12, false}; }  // storage IOPS

  bool contains(double x) const { return (min_exclusive ? x > min : x >= min) && x <= max; }
  std::string describe(bool integer) const;
};

// Levenshtein distance; used to suggest the key the user probably meant.
std::size_t edit_distance(const std::string& a, const std::string& b);
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// Short printable form of a JSON value for error lines.
std::string show_value(const json& value);

class ObjectReader {
 public:
  // REQUIRES: `object` outlives the reader. Throws InputError if it is not an object.
  ObjectReader(const json& object, std::string file, std::string path);

  bool has(const std::string& key) const;
  double number(const std::string& key, double fallback, Range range);
  std::optional<double> optional_number(const std::string& key, Range range);
  double required_number(const std::string& key, Range range);
  std::int64_t integer(const std::string& key, std::int64_t fallback, Range range);
  std::optional<std::int64_t> optional_integer(const std::string& key, Range range);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);
  // A nested object; a missing key reads as an empty object.
  ObjectReader object(const std::string& key);
  // An array of objects (missing: empty). The reader of each element is returned.
  std::vector<ObjectReader> array_of_objects(const std::string& key);
  // Marks a key as known and returns its raw value (nullptr when absent).
  const json* raw(const std::string& key);

  // Throws InputError naming the first unknown key and the nearest known one.
  void finish() const;

  const std::string& file() const { return file_; }
  std::string path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const json& value, const std::string& expected) const;

 private:
  const json* find(const std::string& key);
  const json* object_;
  std::string file_;
  std::string path_;
  std::vector<std::string> known_;
  static const json empty_object_;
};

// A read stream's rate cap: 0 means "no cap", else Range::bytes_per_s() (a cap under 1 B/s is a typo).
double read_rate_cap_bytes_per_s(ObjectReader& r, const std::string& key, double fallback);

}  // namespace pipeplan
