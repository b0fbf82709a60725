#include "models/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace pipeplan {

const json ObjectReader::empty_object_ = json::object();

namespace {
// Whole numbers in full (an integer bound of 16777216 read as "1.67772e+07" otherwise), others in
// the stream's default 6 significant digits.
std::string fmt_number(double x) {
  if (std::fabs(x) < 1e15 && x == std::floor(x)) return std::to_string(static_cast<long long>(x));
  std::ostringstream s;
  s << x;
  return s.str();
}
}  // namespace

std::string Range::describe(bool integer) const {
  const std::string what = integer ? "an integer" : "a number";
  const bool has_min = std::isfinite(min);
  const bool has_max = std::isfinite(max);
  if (has_min && has_max) return what + " in [" + fmt_number(min) + ", " + fmt_number(max) + "]";
  if (has_min) return what + (min_exclusive ? " > " : " >= ") + fmt_number(min);
  if (has_max) return what + " <= " + fmt_number(max);
  return what;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string show_value(const json& value) {
  std::string text = value.dump(-1, ' ', true, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

ObjectReader::ObjectReader(const json& object, std::string file, std::string path)
    : object_(&object), file_(std::move(file)), path_(std::move(path)) {
  if (!object.is_object()) throw InputError(file_, path_, show_value(object), "an object");
}

void ObjectReader::fail(const std::string& key, const json& value, const std::string& expected) const {
  throw InputError(file_, path_of(key), show_value(value), expected);
}

const json* ObjectReader::find(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool ObjectReader::has(const std::string& key) const {
  auto it = object_->find(key);
  return it != object_->end() && !it->is_null();
}

const json* ObjectReader::raw(const std::string& key) { return find(key); }

std::optional<double> ObjectReader::optional_number(const std::string& key, Range range) {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, *v, range.describe(false));
  const double x = v->get<double>();
  if (!std::isfinite(x) || !range.contains(x)) fail(key, *v, range.describe(false));
  return x;
}

double ObjectReader::number(const std::string& key, double fallback, Range range) {
  return optional_number(key, range).value_or(fallback);
}

double ObjectReader::required_number(const std::string& key, Range range) {
  auto x = optional_number(key, range);
  if (!x) throw InputError(file_, path_of(key), "nothing", range.describe(false) + " (required)");
  return *x;
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key, Range range) {
  const json* v = find(key);
  if (!v) return std::nullopt;
  bool integral = v->is_number_integer() || v->is_number_unsigned();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    integral = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15;
  }
  if (!integral) fail(key, *v, range.describe(true));
  const double as_double = v->get<double>();
  if (!range.contains(as_double)) fail(key, *v, range.describe(true));
  return static_cast<std::int64_t>(as_double);
}

std::int64_t ObjectReader::integer(const std::string& key, std::int64_t fallback, Range range) {
  return optional_integer(key, range).value_or(fallback);
}

bool ObjectReader::boolean(const std::string& key, bool fallback) {
  const json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, *v, "true or false");
  return v->get<bool>();
}

std::string ObjectReader::string(const std::string& key, const std::string& fallback) {
  const json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, *v, "a string");
  return v->get<std::string>();
}

std::string ObjectReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) {
  std::string expected = "one of";
  for (std::size_t i = 0; i < allowed.size(); ++i) expected += (i ? ", \"" : " \"") + allowed[i] + "\"";
  const json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, *v, expected);
  const auto s = v->get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) fail(key, *v, expected);
  return s;
}

ObjectReader ObjectReader::object(const std::string& key) {
  const json* v = find(key);
  if (!v) return ObjectReader(empty_object_, file_, path_of(key));
  if (!v->is_object()) fail(key, *v, "an object");
  return ObjectReader(*v, file_, path_of(key));
}

std::vector<ObjectReader> ObjectReader::array_of_objects(const std::string& key) {
  std::vector<ObjectReader> out;
  const json* v = find(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, *v, "an array of objects");
  for (std::size_t i = 0; i < v->size(); ++i) {
    out.emplace_back((*v)[i], file_, path_of(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

void ObjectReader::finish() const {
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
    const std::string suggestion = nearest(it.key(), known_);
    std::string expected = "a known key";
    if (!suggestion.empty()) expected += " (did you mean \"" + suggestion + "\"?)";
    throw InputError(file_, path_of(it.key()), "unknown key \"" + it.key() + "\"", expected);
  }
}

double read_rate_cap_bytes_per_s(ObjectReader& r, const std::string& key, double fallback) {
  const double cap = r.number(key, fallback, Range::between(0.0, Range::bytes_per_s().max));
  if (cap > 0.0 && !Range::bytes_per_s().contains(cap)) r.fail(key, cap, "0 (no cap) or a rate in [1, 1e+15] B/s");
  return cap;
}

}  // namespace pipeplan
