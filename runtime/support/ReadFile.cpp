// Whole-file reads with the file's kind and size checked first.
#include "runtime/support/ReadFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace quill {

namespace {
std::string describeKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISFIFO(mode))
    return "a pipe";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}
} // namespace

ErrorOr<std::string> readSmallFile(const std::string &path, uint64_t maxBytes,
                                   const std::string &what) {
  auto fail = [&](const std::string &message) { return Status::error(path + ": " + message); };
  // Non-blocking, so opening a FIFO with no writer cannot hang; the kind is
  // checked before any read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail("cannot open " + what + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    return fail("cannot stat " + what + ": " + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    std::string kind = describeKind(st.st_mode);
    return fail(what + " is " + kind + (kind == "not a regular file" ? "" : ", not a file"));
  }
  uint64_t size = uint64_t(st.st_size);
  if (size > maxBytes) {
    ::close(fd);
    return fail(what + " is " + std::to_string(size) + " bytes, more than the limit of " +
                std::to_string(maxBytes));
  }
  std::string bytes(size, '\0');
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, bytes.data() + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = n < 0 ? errno : 0;
      ::close(fd);
      return fail("cannot read " + what + ": " +
                  (error ? std::strerror(error) : "the file shrank while it was read"));
    }
    got += size_t(n);
  }
  ::close(fd);
  return bytes;
}

} // namespace quill
