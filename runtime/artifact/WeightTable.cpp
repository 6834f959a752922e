// Encoding, checking and summarizing the artifact's weight table.
#include "runtime/artifact/WeightTable.h"

#include "runtime/support/ByteStream.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace quill {

std::string byteSizeText(uint64_t bytes) {
  char text[32];
  if (bytes < 1000)
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof text, bytes < 1000000 ? "%.1f kB" : "%.1f MB",
                  bytes < 1000000 ? double(bytes) / 1e3 : double(bytes) / 1e6);
  return text;
}

std::vector<uint8_t> encodeWeightTable(const std::vector<WeightEntry> &entries) {
  ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(entries.size()));
  for (const WeightEntry &e : entries) {
    assert(e.rowGroups <= 0xFF && "row groups take bits 8-15");
    w.put<uint32_t>(static_cast<uint32_t>(e.encoding) | (e.rowGroups << 8));
    w.put<uint64_t>(e.offset);
    w.put<uint64_t>(e.bytes);
    w.put<uint64_t>(e.elements);
    w.putString(e.name);
  }
  return std::move(w.bytes());
}

ErrorOr<std::vector<WeightEntry>> decodeWeightTable(const uint8_t *data, size_t size,
                                                    uint64_t weightBytes) {
  auto fail = [](const std::string &what) { return Status::error("weight table: " + what); };
  ByteReader r(data, size);
  const uint32_t count = r.get<uint32_t>();
  // Each entry takes at least 32 bytes: a count beyond that is corrupt
  // before anything is allocated for it.
  if (!r.ok() || count > kMaxWeightEntries || count > r.remaining() / 32)
    return fail("corrupt entry count");
  std::vector<WeightEntry> entries(count);
  uint64_t end = 0;
  for (uint32_t i = 0; i < count; ++i) {
    WeightEntry &e = entries[i];
    const uint32_t word = r.get<uint32_t>();
    const uint32_t encoding = word & 0xFF, rowGroups = word >> 8;
    e.offset = r.get<uint64_t>();
    e.bytes = r.get<uint64_t>();
    e.elements = r.get<uint64_t>();
    e.name = r.getString(kMaxWeightNameBytes);
    if (!r.ok())
      return fail("entry " + std::to_string(i) + " is truncated or corrupt");
    const std::string which = "entry " + std::to_string(i);
    if (e.name.empty() ||
        !std::all_of(e.name.begin(), e.name.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
      return fail(which + " has no printable name");
    if (encoding >= kWeightEncodingCount)
      return fail("'" + e.name + "' has unknown encoding " + std::to_string(encoding));
    e.encoding = static_cast<WeightEncoding>(encoding);
    const WeightEncodingInfo &info = weightEncodingInfo(e.encoding);
    e.rowGroups = rowGroups;
    uint64_t expected = 0;
    if (e.elements == 0 || e.elements % uint64_t(info.blockElements) != 0 ||
        __builtin_mul_overflow(e.elements / uint64_t(info.blockElements), uint64_t(info.blockBytes),
                               &expected) ||
        expected != e.bytes)
      return fail("'" + e.name + "': " + std::to_string(e.elements) + " " + info.name +
                  " weights cannot take " + std::to_string(e.bytes) + " bytes");
    // Row groups hold the int8 kernels' block types, 8 or 16 whole rows
    // each (so at least whole groups of blocks).
    if (rowGroups != 0 && ((rowGroups != 8 && rowGroups != 16) || info.blockElements == 1 ||
                           e.bytes % (uint64_t(rowGroups) * uint64_t(info.blockBytes)) != 0))
      return fail("'" + e.name + "': " + std::to_string(e.bytes) + " bytes of " + info.name +
                  " cannot be in row groups of " + std::to_string(rowGroups));
    if (e.offset < end || e.offset > weightBytes || e.bytes > weightBytes - e.offset)
      return fail("'" + e.name + "' overlaps another weight or lies outside the " +
                  std::to_string(weightBytes) + "-byte weights section");
    end = e.offset + e.bytes;
  }
  if (!r.atEnd())
    return fail(std::to_string(r.remaining()) + " bytes after the last entry");
  return entries;
}

std::array<uint64_t, kWeightEncodingCount>
bytesByEncoding(const std::vector<WeightEntry> &entries) {
  std::array<uint64_t, kWeightEncodingCount> bytes{};
  for (const WeightEntry &e : entries)
    bytes[static_cast<uint32_t>(e.encoding)] += e.bytes;
  return bytes;
}

std::string dominantEncoding(const std::vector<WeightEntry> &entries) {
  if (entries.empty())
    return "";
  auto bytes = bytesByEncoding(entries);
  size_t most = size_t(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  return kWeightEncodings[most].name;
}

std::string describeWeights(const std::vector<WeightEntry> &entries) {
  auto bytes = bytesByEncoding(entries);
  std::array<int, kWeightEncodingCount> tensors{}, grouped{};
  std::array<uint32_t, kWeightEncodingCount> groupRows{};
  uint64_t total = 0;
  for (const WeightEntry &e : entries) {
    const uint32_t k = static_cast<uint32_t>(e.encoding);
    ++tensors[k];
    if (e.rowGroups) {
      ++grouped[k];
      groupRows[k] = e.rowGroups;
    }
    total += e.bytes;
  }
  std::vector<size_t> present;
  for (size_t k = 0; k < kWeightEncodingCount; ++k)
    if (tensors[k])
      present.push_back(k);
  std::stable_sort(present.begin(), present.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::string text = byteSizeText(total);
  for (size_t i = 0; i < present.size(); ++i) {
    const size_t k = present[i];
    text += (i ? ", " : ": ") + std::string(kWeightEncodings[k].name) + " " +
            byteSizeText(bytes[k]) + " (" + std::to_string(tensors[k]);
    if (grouped[k])
      text +=
          ", " + std::to_string(grouped[k]) + " in row groups of " + std::to_string(groupRows[k]);
    text += ")";
  }
  return text;
}

} // namespace quill
