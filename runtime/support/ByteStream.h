// Bounds-checked little-endian readers and writers for binary formats.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace quill {

/// Appends plain values to a byte vector.
class ByteWriter {
public:
  template <typename T> void put(const T &value) {
    static_assert(std::is_trivially_copyable_v<T>);
    // resize + memcpy rather than insert: GCC 12 warns (a false
    // -Wstringop-overflow) on inserting into a vector still empty.
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void putString(const std::string &s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> &bytes() { return bytes_; }

private:
  std::vector<uint8_t> bytes_;
};

/// Reads plain values from a byte range; any read past the end sets a sticky
/// failure flag and yields zeros, so callers check ok() once at the end.
class ByteReader {
public:
  ByteReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  template <typename T> T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    if (!ok_ || size_ - pos_ < sizeof(T)) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string getString(size_t maxLength = 1 << 20) {
    uint32_t length = get<uint32_t>();
    if (!ok_ || length > maxLength || size_ - pos_ < length) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char *>(data_ + pos_), length);
    pos_ += length;
    return s;
  }
  bool ok() const { return ok_; }
  bool atEnd() const { return pos_ == size_; }
  size_t remaining() const { return size_ - pos_; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

/// A fast 64-bit checksum (word-at-a-time multiply-xor), enough to catch
/// truncation and bit flips in an artifact; not cryptographic.
uint64_t checksum64(const uint8_t *data, size_t size);

/// checksum64 computed over data that arrives in pieces (gigabytes of
/// weights written while they are produced): same result as one call.
class Checksum64 {
public:
  explicit Checksum64(uint64_t totalSize);
  void update(const uint8_t *data, size_t size);
  uint64_t finish();

private:
  void block(const uint8_t *data);
  uint64_t lanes_[4];
  uint8_t pending_[32];
  size_t pendingSize_ = 0;
};

} // namespace quill
