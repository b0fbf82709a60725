#include "models/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>
#include <unistd.h>

namespace pipeplan {

std::string write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(temporary.c_str(), "wb");
  if (!f) return path + ": cannot write (" + std::strerror(errno) + ")";
  const bool written = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(temporary.c_str());
    return path + ": write failed (disk full?)";
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    return path + ": cannot rename into place (" + why + ")";
  }
  return "";
}

TextFile read_text_file(const std::string& path, std::size_t max_bytes) {
  TextFile file;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file.error = "a directory";
    return file;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    file.cannot_open = true;
    return file;
  }
  std::vector<char> chunk(std::size_t{1} << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    file.text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (file.text.size() > max_bytes) {
      file.text.clear();
      file.error = "more than " + std::to_string(max_bytes >> 20) + " MiB";
      return file;
    }
  }
  if (in.bad()) file.error = "a read error";
  return file;
}

}  // namespace pipeplan
