// libFuzzer target: the artifact loader (Artifact::open), with the weights
// mapped and copied (the copy's pread and checksum). The header's file
// size and every checksum are recomputed first where the table lies inside
// the input, so mutations reach the section decoders instead of stopping at
// a checksum mismatch.
#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/support/ByteStream.h"
#include "tests/fuzz/FuzzInput.h"

#include <cstring>
#include <string>
#include <vector>

using namespace quill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  ArtifactHeader header;
  if (size >= sizeof header) {
    std::memcpy(&header, bytes.data(), sizeof header);
    header.fileSize = size;
    const uint64_t table = header.sectionTableOffset;
    const uint64_t tableBytes = uint64_t(header.sectionCount) * sizeof(SectionEntry);
    if (header.sectionCount <= 64 && table <= size && tableBytes <= size - table) {
      for (uint32_t i = 0; i < header.sectionCount; ++i) {
        SectionEntry e;
        std::memcpy(&e, bytes.data() + table + i * sizeof e, sizeof e);
        if (e.offset <= size && e.size <= size - e.offset)
          e.checksum = checksum64(bytes.data() + e.offset, e.size);
        std::memcpy(bytes.data() + table + i * sizeof e, &e, sizeof e);
      }
      header.sectionTableChecksum = checksum64(bytes.data() + table, tableBytes);
    }
    std::memcpy(bytes.data(), &header, sizeof header);
  }
  const std::string path = fuzz::inputPath(bytes.data(), bytes.size());
  (void)Artifact::open(path);
  (void)Artifact::open(path, /*verifyWeights=*/true, WeightPages::Copied);
  return 0;
}
