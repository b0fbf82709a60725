// Writing output files so that a reader never sees half a file: write a temporary file in
// the same directory, then rename it into place (atomic on POSIX file systems).
#pragma once

#include <string>

namespace pipeplan {

// Returns "" on success, else a one-line error naming the path.
std::string write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace pipeplan
