// InputError: the one error type for bad user input (scenario, profile, option).
// It carries what the contract's one-line message needs: the file, the JSON path, the bad
// value and what was expected. The CLI turns it into that line and exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace pipeplan {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_path, std::string value, std::string expected)
      : std::runtime_error(format(file, json_path, value, expected)),
        file_(std::move(file)),
        json_path_(std::move(json_path)) {}

  // A message that is not about one value (missing file, malformed JSON).
  InputError(std::string file, std::string message)
      : std::runtime_error(file.empty() ? message : file + ": " + message), file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }

 private:
  static std::string format(const std::string& file, const std::string& path, const std::string& value,
                            const std::string& expected) {
    std::string out = file.empty() ? std::string("<input>") : file;
    out += ": " + (path.empty() ? std::string("(top level)") : path) + ": got " + value + ", expected " + expected;
    return out;
  }
  std::string file_;
  std::string json_path_;
};

}  // namespace pipeplan
