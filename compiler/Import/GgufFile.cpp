// Parsing GGUF headers, metadata and tensor infos with bounds checks on
// every count, length and offset (a corrupt count never turns into a huge
// allocation: each is checked against the bytes left first).
#include "compiler/Import/GgufFile.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>

namespace quill {

namespace {

/// Arrays may nest; real files use one level.
constexpr int kMaxArrayDepth = 8;
/// ggml's GGML_MAX_DIMS.
constexpr uint32_t kMaxDims = 4;
/// Keys and tensor names are short; a longer one is corruption.
constexpr uint64_t kMaxNameBytes = 1 << 16;
/// The longest array read (vocabularies and merge lists are well below).
constexpr uint64_t kMaxArrayElements = 1 << 24;

/// A cursor over the mapped bytes that fails with a message.
class Cursor {
public:
  Cursor(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  template <typename T> bool read(T &value) {
    if (size_ - pos_ < sizeof(T))
      return false;
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool readString(std::string &out, uint64_t maxBytes) {
    uint64_t length;
    if (!read(length) || length > size_ - pos_ || length > maxBytes)
      return false;
    out.assign(reinterpret_cast<const char *>(data_ + pos_), length);
    pos_ += length;
    return true;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

/// The smallest number of bytes one value of `type` takes on disk.
uint64_t minimumBytes(GgufType type) {
  switch (type) {
  case GgufType::UInt8:
  case GgufType::Int8:
  case GgufType::Bool:
    return 1;
  case GgufType::UInt16:
  case GgufType::Int16:
    return 2;
  case GgufType::UInt32:
  case GgufType::Int32:
  case GgufType::Float32:
    return 4;
  case GgufType::String:
  case GgufType::UInt64:
  case GgufType::Int64:
  case GgufType::Float64:
    return 8;
  case GgufType::Array:
    return 12;
  }
  return 1;
}

bool isKnownType(uint32_t type) { return type <= uint32_t(GgufType::Float64); }

/// Reads one value of `type`; on failure sets `error`.
bool readValue(Cursor &in, GgufType type, GgufValue &out, int depth, std::string &error) {
  out.type = type;
  auto scalar = [&](auto tag) {
    decltype(tag) v;
    if (!in.read(v))
      return false;
    if constexpr (std::is_floating_point_v<decltype(tag)>)
      out.floatValue = double(v);
    else if constexpr (std::is_signed_v<decltype(tag)>)
      out.signedValue = int64_t(v);
    else
      out.unsignedValue = uint64_t(v);
    return true;
  };
  switch (type) {
  case GgufType::UInt8:
    return scalar(uint8_t()) || (error = "truncated", false);
  case GgufType::Int8:
    return scalar(int8_t()) || (error = "truncated", false);
  case GgufType::UInt16:
    return scalar(uint16_t()) || (error = "truncated", false);
  case GgufType::Int16:
    return scalar(int16_t()) || (error = "truncated", false);
  case GgufType::UInt32:
    return scalar(uint32_t()) || (error = "truncated", false);
  case GgufType::Int32:
    return scalar(int32_t()) || (error = "truncated", false);
  case GgufType::UInt64:
    return scalar(uint64_t()) || (error = "truncated", false);
  case GgufType::Int64:
    return scalar(int64_t()) || (error = "truncated", false);
  case GgufType::Float32:
    return scalar(float()) || (error = "truncated", false);
  case GgufType::Float64:
    return scalar(double()) || (error = "truncated", false);
  case GgufType::Bool: {
    uint8_t b;
    if (!in.read(b))
      return error = "truncated", false;
    if (b > 1)
      return error = "bool value " + std::to_string(b) + " is not 0 or 1", false;
    out.unsignedValue = b;
    return true;
  }
  case GgufType::String:
    if (!in.readString(out.stringValue, UINT64_MAX))
      return error = "truncated string", false;
    return true;
  case GgufType::Array: {
    if (depth >= kMaxArrayDepth)
      return error = "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels",
             false;
    uint32_t elementType;
    uint64_t count;
    if (!in.read(elementType) || !in.read(count))
      return error = "truncated array header", false;
    if (!isKnownType(elementType))
      return error = "array of unknown type " + std::to_string(elementType), false;
    out.elementType = GgufType(elementType);
    if (count > in.remaining() / minimumBytes(out.elementType))
      return error = "array of " + std::to_string(count) + " elements is longer than the file",
             false;
    if (count > kMaxArrayElements)
      return error = "array of " + std::to_string(count) +
                     " elements is longer than Quill reads (" + std::to_string(kMaxArrayElements) +
                     ")",
             false;
    out.elements.resize(count);
    for (GgufValue &element : out.elements)
      if (!readValue(in, out.elementType, element, depth + 1, error))
        return false;
    return true;
  }
  }
  error = "unknown type " + std::to_string(uint32_t(type));
  return false;
}

std::optional<SourceDType> convertibleType(uint32_t ggmlType) {
  switch (ggmlType) {
  case 0:
    return SourceDType::F32;
  case 1:
    return SourceDType::F16;
  case 2:
    return SourceDType::Q4_0;
  case 8:
    return SourceDType::Q8_0;
  case 12:
    return SourceDType::Q4_K;
  case 14:
    return SourceDType::Q6_K;
  case 30:
    return SourceDType::BF16;
  default:
    return std::nullopt;
  }
}

} // namespace

const char *ggufTypeName(GgufType type) {
  static const char *const names[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                      "int32",  "float32", "bool",   "string", "array",
                                      "uint64", "int64",   "float64"};
  return uint32_t(type) < std::size(names) ? names[uint32_t(type)] : "unknown";
}

std::string ggmlTypeName(uint32_t type) {
  // ggml's type numbering (some numbers are retired and unused).
  static const char *const names[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "type 4", "type 5", "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",   "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",  "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M",  "BF16"};
  if (type < std::size(names))
    return names[type];
  return "type " + std::to_string(type);
}

std::optional<int64_t> GgufValue::asInteger() const {
  switch (type) {
  case GgufType::UInt8:
  case GgufType::UInt16:
  case GgufType::UInt32:
  case GgufType::UInt64:
    if (unsignedValue > uint64_t(INT64_MAX))
      return std::nullopt;
    return int64_t(unsignedValue);
  case GgufType::Int8:
  case GgufType::Int16:
  case GgufType::Int32:
  case GgufType::Int64:
    return signedValue;
  default:
    return std::nullopt;
  }
}

std::optional<double> GgufValue::asNumber() const {
  if (type == GgufType::Float32 || type == GgufType::Float64)
    return floatValue;
  if (auto i = asInteger())
    return double(*i);
  return std::nullopt;
}

std::vector<int64_t> GgufTensorInfo::rowMajorShape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

const GgufValue *GgufFile::find(const std::string &key) const {
  auto it = metadataIndex_.find(key);
  return it == metadataIndex_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo *GgufFile::findTensor(const std::string &name) const {
  auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

ErrorOr<GgufFile> GgufFile::open(const std::string &path) {
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.status();
  GgufFile file(mapped.take());
  if (Status s = file.parse(); !s)
    return Status::error(path + ": " + s.message());
  return ErrorOr<GgufFile>(std::move(file));
}

Status GgufFile::parse() {
  Cursor in(file_.data(), file_.size());
  uint32_t magic;
  uint64_t tensorCount, metadataCount;
  if (!in.read(magic) || magic != kGgufMagic)
    return Status::error("not a GGUF file (no \"GGUF\" magic)");
  if (!in.read(version_))
    return Status::error("GGUF header truncated");
  if (version_ == 1)
    return Status::error("GGUF version 1 is not supported (its counts are "
                         "32-bit; convert the file again)");
  if (version_ != 2 && version_ != 3) {
    uint32_t swapped = __builtin_bswap32(version_);
    if (swapped == 2 || swapped == 3)
      return Status::error("big-endian GGUF is not supported");
    return Status::error("unsupported GGUF version " + std::to_string(version_) +
                         " (Quill reads 2 and 3)");
  }
  if (!in.read(tensorCount) || !in.read(metadataCount))
    return Status::error("GGUF header truncated");
  // A key is at least 8 + 4 bytes, a tensor info at least 8 + 4 + 4 + 8.
  if (metadataCount > in.remaining() / 12)
    return Status::error("metadata count " + std::to_string(metadataCount) +
                         " is larger than the file can hold");
  if (tensorCount > in.remaining() / 24)
    return Status::error("tensor count " + std::to_string(tensorCount) +
                         " is larger than the file can hold");

  metadata_.reserve(metadataCount);
  for (uint64_t i = 0; i < metadataCount; ++i) {
    std::string key;
    uint32_t type;
    const std::string which = "metadata entry " + std::to_string(i);
    if (!in.readString(key, kMaxNameBytes) || !in.read(type))
      return Status::error(which + " truncated");
    if (!isKnownType(type))
      return Status::error("metadata '" + key + "' has unknown type " + std::to_string(type));
    GgufValue value;
    std::string error;
    if (!readValue(in, GgufType(type), value, 0, error))
      return Status::error("metadata '" + key + "': " + error);
    if (!metadataIndex_.emplace(key, metadata_.size()).second)
      return Status::error("metadata key '" + key + "' appears twice");
    metadata_.emplace_back(std::move(key), std::move(value));
  }

  if (const GgufValue *a = find("general.alignment")) {
    if (a->type != GgufType::UInt32 || a->unsignedValue == 0 ||
        (a->unsignedValue & (a->unsignedValue - 1)) != 0)
      return Status::error("general.alignment must be a uint32 power of two");
    alignment_ = a->unsignedValue;
  }

  tensors_.reserve(tensorCount);
  for (uint64_t i = 0; i < tensorCount; ++i) {
    GgufTensorInfo t;
    uint32_t nDims;
    const std::string which = "tensor info " + std::to_string(i);
    if (!in.readString(t.name, kMaxNameBytes) || !in.read(nDims))
      return Status::error(which + " truncated");
    if (nDims == 0 || nDims > kMaxDims)
      return Status::error("tensor '" + t.name + "' has " + std::to_string(nDims) +
                           " dimensions (1 to " + std::to_string(kMaxDims) + ")");
    t.dims.resize(nDims);
    for (uint64_t &d : t.dims)
      if (!in.read(d))
        return Status::error(which + " truncated");
    if (!in.read(t.ggmlType) || !in.read(t.offset))
      return Status::error(which + " truncated");
    if (!tensorIndex_.emplace(t.name, tensors_.size()).second)
      return Status::error("tensor '" + t.name + "' appears twice");
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t infosEnd = in.pos();
  const uint64_t dataStart = (infosEnd + alignment_ - 1) / alignment_ * alignment_;
  if (dataStart > file_.size() && !tensors_.empty())
    return Status::error("truncated before the tensor data");
  const uint64_t dataBytes = dataStart <= file_.size() ? file_.size() - dataStart : 0;
  for (GgufTensorInfo &t : tensors_) {
    uint64_t count = 1;
    for (uint64_t d : t.dims)
      if (d == 0 || __builtin_mul_overflow(count, d, &count))
        return Status::error("tensor '" + t.name + "' has a zero or overflowing dimension");
    if (t.offset % alignment_ != 0)
      return Status::error("tensor '" + t.name + "' offset " + std::to_string(t.offset) +
                           " is not a multiple of the alignment " + std::to_string(alignment_));
    t.dtype = convertibleType(t.ggmlType);
    if (!t.dtype)
      continue; // Not readable by Quill; the importer says so if it is used.
    std::optional<uint64_t> bytes = dtypeBytes(*t.dtype, count);
    if (!bytes || t.dims[0] % uint64_t(blockElements(*t.dtype)) != 0)
      return Status::error("tensor '" + t.name + "' of " + std::to_string(count) +
                           " elements is not rows of "
                           "whole " +
                           ggmlTypeName(t.ggmlType) + " blocks");
    if (t.offset > dataBytes || *bytes > dataBytes - t.offset)
      return Status::error("tensor '" + t.name + "' (" + std::to_string(*bytes) +
                           " bytes at data offset " + std::to_string(t.offset) +
                           ") extends past the end of the file: truncated or corrupt");
    t.bytes = *bytes;
    t.data = file_.data() + dataStart + t.offset;
  }
  return checkDataLayout(dataBytes);
}

namespace {
std::string dimsString(const std::vector<uint64_t> &dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}
} // namespace

Status GgufFile::checkDataLayout(uint64_t dataBytes) const {
  // Writers lay tensors out back to back, each padded to the alignment: a
  // tensor's type and shape must account for its bytes exactly, so ranges
  // that overlap, or a type relabelled to one of fewer bytes, are errors.
  std::vector<const GgufTensorInfo *> byOffset;
  for (const GgufTensorInfo &t : tensors_)
    byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const GgufTensorInfo *a, const GgufTensorInfo *b) { return a->offset < b->offset; });
  for (size_t i = 0; i < byOffset.size(); ++i) {
    const GgufTensorInfo &t = *byOffset[i];
    const GgufTensorInfo *next = i + 1 < byOffset.size() ? byOffset[i + 1] : nullptr;
    if (next && next->offset == t.offset)
      return Status::error("tensors '" + t.name + "' and '" + next->name +
                           "' start at the same data offset " + std::to_string(t.offset));
    if (!t.dtype)
      continue; // Its size is unknown to Quill, and so is the gap after it.
    const uint64_t end = t.offset + t.bytes;
    const uint64_t following = next ? next->offset : dataBytes;
    if (next && following < end)
      return Status::error("tensor '" + t.name + "' (" + std::to_string(t.bytes) +
                           " bytes at data offset " + std::to_string(t.offset) +
                           ") overlaps tensor '" + next->name + "' at " +
                           std::to_string(following));
    if (following - end >= alignment_)
      return Status::error("tensor '" + t.name + "' is " + std::to_string(t.bytes) + " bytes as " +
                           ggmlTypeName(t.ggmlType) + " " + dimsString(t.dims) + ", but " +
                           std::to_string(following - t.offset) + " bytes lie before " +
                           (next ? "tensor '" + next->name + "'" : std::string("the file end")) +
                           ": its type or shape is wrong");
  }
  return Status::ok();
}

} // namespace quill
