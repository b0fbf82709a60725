#include "calibrate/profile_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pipeplan::calibrate {

std::string write_json_atomically(const std::filesystem::path& target, const nlohmann::json& document) {
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  // (appended piece by piece: GCC 12 warns falsely, -Wrestrict, on "." + string + ...)
  std::string name(1, '.');
  name += target.filename().string();
  name += ".tmp.";
  name += std::to_string(getpid());
  const std::filesystem::path tmp = dir / name;
  const std::string text = document.dump(2) + "\n";

  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp.string() + ": " + std::strerror(errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "cannot write " + tmp.string() + ": " + why;
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename " + tmp.string() + " to " + target.string() + ": " + why;
  }
  return "";
}

}  // namespace pipeplan::calibrate
