// A reader for safetensors files: an u64 header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {...}}, then the tensor bytes, offsets relative to the end of the header.
// Every offset is checked: inside the data, matching dtype x shape, and no
// two tensors overlapping.
#pragma once

#include "compiler/Import/TensorConversion.h"
#include "runtime/support/MappedFile.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace quill {

/// Headers larger than this are refused (the format's own limit is 100 MB).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

/// One tensor of a safetensors file.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;          ///< As written: "F32", "BF16", "I64", ...
  std::vector<int64_t> shape; ///< Row-major.
  /// Set for the dtypes Quill converts (F32, F16, BF16).
  std::optional<SourceDType> sourceDType;
  const uint8_t *data = nullptr;
  uint64_t bytes = 0;
};

/// A mapped safetensors file with a validated header.
class SafetensorsFile {
public:
  /// Maps and checks `path`; every failure is one line naming the path.
  static ErrorOr<SafetensorsFile> open(const std::string &path);

  const std::string &path() const { return file_.path(); }
  const std::vector<SafetensorsTensor> &tensors() const { return tensors_; }
  const SafetensorsTensor *find(const std::string &name) const;

private:
  explicit SafetensorsFile(MappedFile file) : file_(std::move(file)) {}
  Status parse();

  MappedFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

} // namespace quill
