// Writing output files so that a reader never sees half a file: write a temporary file in
// the same directory, then rename it into place (atomic on POSIX file systems).
#pragma once

#include <cstddef>
#include <string>

namespace pipeplan {

// Returns "" on success, else a one-line error naming the path.
std::string write_file_atomically(const std::string& path, const std::string& contents);

// Reading an input file whole, in chunks up to `max_bytes`, so that a directory or a device such as /dev/zero is
// refused rather than read forever. On failure `error` says what was found instead of a file ("a directory",
// "more than N MiB", "a read error"; "" with cannot_open when it could not be opened).
struct TextFile {
  std::string text;
  bool cannot_open = false;
  std::string error;
  bool ok() const { return !cannot_open && error.empty(); }
};
TextFile read_text_file(const std::string& path, std::size_t max_bytes);

}  // namespace pipeplan
