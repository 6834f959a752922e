// mmap-based read-only file access.
#include "runtime/support/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace quill {

ErrorOr<MappedFile> MappedFile::open(const std::string &path, const MappedFileWording &wording) {
  auto fail = [&](const char *what, int error) {
    return Status::error(path + ": " + what + ": " + std::strerror(error));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(wording.cannotOpen, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    if (!wording.cannotStat)
      return Status::error(path + ": " + wording.notRegular);
    return fail(wording.cannotStat, error);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": " + wording.notRegular);
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = size_t(st.st_size);
  if (file.size_ > 0) {
    void *mapping = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      return fail(wording.cannotMap, error);
    }
    file.data_ = static_cast<const uint8_t *>(mapping);
  }
  file.fd_ = fd;
  return ErrorOr<MappedFile>(std::move(file));
}

MappedFile::MappedFile(MappedFile &&other) noexcept { *this = std::move(other); }

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

Status MappedFile::copyOut(size_t offset, size_t length, uint8_t *destination) const {
  if (fd_ < 0 || offset > size_ || length > size_ - offset)
    return Status::error(path_ + ": cannot read bytes " + std::to_string(offset) + " to " +
                         std::to_string(offset + length) + " (the file has " +
                         std::to_string(size_) + ")");
  while (length > 0) {
    // Bounded reads: a single pread returns at most about 2 GiB.
    ssize_t n = ::pread(fd_, destination, std::min<size_t>(length, size_t(1) << 30), off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(path_ + ": cannot read: " + std::strerror(errno));
    if (n == 0)
      return Status::error(path_ + ": cannot read: the file shrank while it was read");
    destination += n;
    offset += size_t(n);
    length -= size_t(n);
  }
  return Status::ok();
}

void MappedFile::unmap() {
  if (data_)
    ::munmap(const_cast<uint8_t *>(data_), size_);
  data_ = nullptr;
  size_ = 0;
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

} // namespace quill
