// A whole file mapped read-only: artifacts, checkpoints and the importers
// that read tensors in place (GGUF, safetensors) all map through it.
#pragma once

#include "runtime/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace quill {

/// How MappedFile::open words a failure, after "<path>: ". The phrases for
/// open, stat and map are followed by ": <strerror>".
struct MappedFileWording {
  const char *cannotOpen = "cannot open";
  /// Null: a failed stat is reported as `notRegular`.
  const char *cannotStat = "cannot stat";
  const char *notRegular = "not a regular file";
  const char *cannotMap = "cannot mmap";
};

/// A read-only private mapping of a regular file. Movable, not copyable;
/// pointers into it stay valid while the object (or its moved-to owner)
/// lives. The descriptor stays open with it, for copyOut.
class MappedFile {
public:
  /// Maps `path`; errors name the path and what failed, worded by `wording`.
  static ErrorOr<MappedFile> open(const std::string &path, const MappedFileWording &wording = {});

  /// An empty mapping of no file: data() null, size() 0.
  MappedFile() = default;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  /// Null for an empty file.
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

  /// Copies [offset, offset + length) of the file into `destination` with
  /// pread: straight from the page cache, without faulting the mapping's
  /// pages into this process (a copy made through the mapping takes a fault
  /// per few pages and leaves them resident). An error names the path and
  /// what failed.
  Status copyOut(size_t offset, size_t length, uint8_t *destination) const;

private:
  void unmap();

  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

} // namespace quill
