// A reader for GGUF files (versions 2 and 3, little-endian), the llama.cpp
// ecosystem's model format: header, metadata key-values of every type,
// tensor infos and the aligned tensor data. Knows nothing of any
// architecture (GgufModel.h maps llama's tensors).
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; the
// metadata as {string key, u32 type, value}; the tensor infos as {string
// name, u32 n_dims, u64 ne[n_dims] (fastest-varying first), u32 ggml type,
// u64 offset}; padding to general.alignment (default 32); the data, where
// each tensor starts at its offset (a multiple of the alignment). Strings are
// u64 length + bytes; arrays are u32 element type + u64 count + elements.
#pragma once

#include "compiler/Import/TensorConversion.h"
#include "runtime/support/MappedFile.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace quill {

constexpr uint32_t kGgufMagic = 0x46554747; // "GGUF" read little-endian.
constexpr uint64_t kGgufDefaultAlignment = 32;

/// Metadata value types, as numbered on disk.
enum class GgufType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

/// "uint32", "string", "array", ...
const char *ggufTypeName(GgufType type);

/// One metadata value.
struct GgufValue {
  GgufType type = GgufType::UInt8;
  uint64_t unsignedValue = 0; ///< Unsigned integers and bools.
  int64_t signedValue = 0;    ///< Signed integers.
  double floatValue = 0;      ///< Float32 and Float64.
  std::string stringValue;
  GgufType elementType = GgufType::UInt8; ///< Arrays.
  std::vector<GgufValue> elements;        ///< Arrays.

  /// The value when it is an integer of any width and sign that fits.
  std::optional<int64_t> asInteger() const;
  /// The value when it is a float or an integer.
  std::optional<double> asNumber() const;
  const std::string *asString() const { return type == GgufType::String ? &stringValue : nullptr; }
  const std::vector<GgufValue> *asArray() const {
    return type == GgufType::Array ? &elements : nullptr;
  }
};

/// One tensor info. `data` is set (and bounds-checked) only for the types
/// Quill converts; others keep their raw type number for messages.
struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims; ///< ne[]: dims[0] varies fastest.
  uint32_t ggmlType = 0;
  uint64_t offset = 0; ///< From the start of the data section.
  std::optional<SourceDType> dtype;
  const uint8_t *data = nullptr;
  uint64_t bytes = 0;

  /// The shape Quill uses: ne reversed (rows first).
  std::vector<int64_t> rowMajorShape() const;
};

/// ggml's name of a tensor type ("F32", "Q4_K", ...) or "type N".
std::string ggmlTypeName(uint32_t type);

/// A mapped GGUF file with its metadata and tensor infos parsed.
class GgufFile {
public:
  /// Maps and parses `path`; every failure is one line naming the path.
  static ErrorOr<GgufFile> open(const std::string &path);

  const std::string &path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  /// Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>> &metadata() const { return metadata_; }
  const GgufValue *find(const std::string &key) const;
  const std::vector<GgufTensorInfo> &tensors() const { return tensors_; }
  const GgufTensorInfo *findTensor(const std::string &name) const;

private:
  explicit GgufFile(MappedFile file) : file_(std::move(file)) {}
  Status parse();
  /// Every tensor's bytes end where the next begins (up to the alignment).
  Status checkDataLayout(uint64_t dataBytes) const;

  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> metadataIndex_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensorIndex_;
};

} // namespace quill
