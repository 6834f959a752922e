// Parsing and validating safetensors headers.
#include "compiler/Import/SafetensorsFile.h"

#include "compiler/Import/JsonValue.h"

#include <algorithm>
#include <cstring>

namespace quill {

namespace {

/// Bytes per element of every safetensors dtype, 0 when unknown.
uint64_t elementBytes(const std::string &dtype) {
  static const std::pair<const char *, uint64_t> sizes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
      {"U64", 8}, {"I32", 4}, {"U32", 4},  {"I16", 2},     {"U16", 2},
      {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (auto [name, size] : sizes)
    if (dtype == name)
      return size;
  return 0;
}

std::optional<SourceDType> convertible(const std::string &dtype) {
  if (dtype == "F32")
    return SourceDType::F32;
  if (dtype == "F16")
    return SourceDType::F16;
  if (dtype == "BF16")
    return SourceDType::BF16;
  return std::nullopt;
}

} // namespace

const SafetensorsTensor *SafetensorsFile::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

ErrorOr<SafetensorsFile> SafetensorsFile::open(const std::string &path) {
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.status();
  SafetensorsFile file(mapped.take());
  if (Status s = file.parse(); !s)
    return Status::error(path + ": " + s.message());
  return ErrorOr<SafetensorsFile>(std::move(file));
}

Status SafetensorsFile::parse() {
  const uint8_t *bytes = file_.data();
  const uint64_t size = file_.size();
  if (size < 8)
    return Status::error("truncated: " + std::to_string(size) +
                         " bytes cannot hold the safetensors header length");
  uint64_t headerBytes;
  std::memcpy(&headerBytes, bytes, 8);
  if (headerBytes > kMaxSafetensorsHeaderBytes)
    return Status::error("header length " + std::to_string(headerBytes) +
                         " exceeds the 100 MB safetensors limit");
  if (headerBytes > size - 8)
    return Status::error("truncated: the header needs " + std::to_string(headerBytes) +
                         " bytes, the file has " + std::to_string(size - 8) + " after the length");
  std::string_view text(reinterpret_cast<const char *>(bytes + 8), headerBytes);
  auto header = parseJson(text, "safetensors header");
  if (!header)
    return header.status();
  const JsonObject *members = header->asObject();
  if (!members)
    return Status::error("the header is not a JSON object");

  const uint64_t dataStart = 8 + headerBytes, dataBytes = size - dataStart;
  struct Range {
    uint64_t begin, end;
    size_t tensor;
  };
  std::vector<Range> ranges;
  for (const auto &[name, info] : *members) {
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &what) {
      return Status::error("tensor '" + name + "': " + what);
    };
    const JsonValue *dtype = info.find("dtype");
    const JsonValue *shape = info.find("shape");
    const JsonValue *offsets = info.find("data_offsets");
    if (!dtype || !dtype->asString() || !shape || !shape->asArray() || !offsets ||
        !offsets->asArray() || offsets->asArray()->size() != 2)
      return bad("needs \"dtype\" (a string), \"shape\" (an array) and "
                 "\"data_offsets\" ([begin, end])");
    SafetensorsTensor t;
    t.name = name;
    t.dtype = *dtype->asString();
    uint64_t perElement = elementBytes(t.dtype);
    if (perElement == 0)
      return bad("unknown dtype '" + t.dtype + "'");
    uint64_t count = 1;
    for (const JsonValue &d : *shape->asArray()) {
      std::optional<int64_t> extent = d.asInteger();
      if (!extent || *extent < 0)
        return bad("shape holds something other than a non-negative integer");
      if (__builtin_mul_overflow(count, uint64_t(*extent), &count))
        return bad("shape overflows 64-bit arithmetic");
      t.shape.push_back(*extent);
    }
    std::optional<int64_t> begin = (*offsets->asArray())[0].asInteger();
    std::optional<int64_t> end = (*offsets->asArray())[1].asInteger();
    if (!begin || !end || *begin < 0 || *end < *begin)
      return bad("data_offsets are not integers 0 <= begin <= end");
    uint64_t expected;
    if (__builtin_mul_overflow(count, perElement, &expected))
      return bad("size overflows 64-bit arithmetic");
    if (uint64_t(*end - *begin) != expected)
      return bad("data_offsets span " + std::to_string(*end - *begin) + " bytes, but " + t.dtype +
                 " of shape [" +
                 [&] {
                   std::string s;
                   for (size_t i = 0; i < t.shape.size(); ++i)
                     s += (i ? ", " : "") + std::to_string(t.shape[i]);
                   return s;
                 }() +
                 "] needs " + std::to_string(expected));
    if (uint64_t(*end) > dataBytes)
      return bad("data_offsets end at " + std::to_string(*end) + ", past the " +
                 std::to_string(dataBytes) + " data bytes: truncated or corrupt");
    t.sourceDType = convertible(t.dtype);
    t.data = bytes + dataStart + *begin;
    t.bytes = expected;
    if (!index_.emplace(name, tensors_.size()).second)
      return bad("appears twice in the header");
    if (expected > 0)
      ranges.push_back({uint64_t(*begin), uint64_t(*end), tensors_.size()});
    tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range &a, const Range &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end)
      return Status::error("tensors '" + tensors_[ranges[i - 1].tensor].name + "' and '" +
                           tensors_[ranges[i].tensor].name + "' overlap in the data");
  // The format's rule: the tensors cover the data exactly, without holes. A
  // header length that is off (the data then starts a byte early or late)
  // or bytes after the last tensor break it.
  uint64_t covered = 0;
  for (const Range &r : ranges) {
    if (r.begin != covered)
      return Status::error("the data has " + std::to_string(r.begin - covered) +
                           " bytes no tensor covers before tensor '" + tensors_[r.tensor].name +
                           "' (is the header length right?)");
    covered = r.end;
  }
  if (covered != dataBytes)
    return Status::error(std::to_string(dataBytes - covered) +
                         " bytes after the last tensor's data (is the header length right?)");
  return Status::ok();
}

} // namespace quill
