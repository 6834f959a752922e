// A whole file mapped read-only, for the importers that read tensors in
// place (GGUF, safetensors).
#pragma once

#include "runtime/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace quill {

/// A read-only private mapping of a regular file. Movable, not copyable;
/// pointers into it stay valid while the object (or its moved-to owner)
/// lives.
class MappedFile {
public:
  /// Maps `path`; errors name the path and what failed.
  static ErrorOr<MappedFile> open(const std::string &path);

  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  /// Null for an empty file.
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  MappedFile() = default;
  void unmap();

  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace quill
