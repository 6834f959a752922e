// Mapping and checking an artifact file.
#include "runtime/artifact/Artifact.h"

#include "runtime/support/ByteStream.h"

#include <cstdio>
#include <cstring>

namespace quill {

ErrorOr<Artifact> Artifact::open(const std::string &path, bool verifyWeights, WeightPages pages) {
  auto fail = [&](const std::string &what) { return Status::error(path + ": " + what); };
  MappedFileWording wording;
  wording.cannotOpen = "cannot open artifact";
  wording.cannotStat = nullptr;
  wording.cannotMap = "cannot map artifact";
  auto file = MappedFile::open(path, wording);
  if (!file)
    return file.status();
  Artifact a;
  a.file_ = file.take();
  const size_t fileSize = a.file_.size();
  if (fileSize < sizeof(ArtifactHeader))
    return fail("not a Quill artifact (file of " + std::to_string(fileSize) +
                " bytes is shorter than the header)");
  const uint8_t *base = a.file_.data();

  ArtifactHeader header;
  std::memcpy(&header, base, sizeof header);
  if (std::memcmp(header.magic, kArtifactMagic, sizeof header.magic) != 0)
    return fail("not a Quill artifact (bad magic)");
  if (header.version != kArtifactVersion)
    return fail("artifact format version " + std::to_string(header.version) +
                " is not supported (this runtime reads version " +
                std::to_string(kArtifactVersion) + "); recompile the model");
  if (header.fileSize != fileSize)
    return fail("artifact is truncated or padded: header says " + std::to_string(header.fileSize) +
                " bytes, file has " + std::to_string(fileSize));
  uint64_t tableBytes = uint64_t(header.sectionCount) * sizeof(SectionEntry);
  if (header.sectionCount > 64 || header.sectionTableOffset > fileSize ||
      tableBytes > fileSize - header.sectionTableOffset)
    return fail("corrupt section table");
  const uint8_t *tablePtr = base + header.sectionTableOffset;
  if (checksum64(tablePtr, tableBytes) != header.sectionTableChecksum)
    return fail("corrupt section table (checksum mismatch)");

  constexpr uint32_t kLastKind = static_cast<uint32_t>(SectionKind::KernelCosts);
  // Byte pointers: the table need not be aligned (memcpy reads the entries).
  const uint8_t *found[kLastKind + 1] = {};
  // The weight section is checked once it is where the kernels read it
  // (a copy is checked on the copy: its bytes are read once, not twice).
  int weightsIndex = -1;
  for (uint32_t i = 0; i < header.sectionCount; ++i) {
    SectionEntry e;
    std::memcpy(&e, tablePtr + i * sizeof(SectionEntry), sizeof e);
    if (e.offset > fileSize || e.size > fileSize - e.offset)
      return fail("section " + std::to_string(i) + " lies outside the file");
    if (e.kind < 1 || e.kind > kLastKind)
      return fail("section " + std::to_string(i) + " has unknown kind " + std::to_string(e.kind) +
                  " (this runtime reads kinds 1 to " + std::to_string(kLastKind) + ")");
    if (found[e.kind])
      return fail("section " + std::to_string(i) + " repeats section kind " +
                  std::to_string(e.kind));
    found[e.kind] = tablePtr + i * sizeof(SectionEntry);
    if (e.kind == uint32_t(SectionKind::Weights))
      weightsIndex = int(i);
    else if (checksum64(base + e.offset, e.size) != e.checksum)
      return fail("section " + std::to_string(i) + " is corrupt (checksum mismatch)");
  }
  auto section = [&](SectionKind kind, const uint8_t *&data, size_t &size) {
    const uint8_t *e = found[static_cast<uint32_t>(kind)];
    if (!e)
      return false;
    SectionEntry copy;
    std::memcpy(&copy, e, sizeof copy);
    data = base + copy.offset;
    size = copy.size;
    return true;
  };
  const uint8_t *data;
  size_t size;
  if (!section(SectionKind::Config, data, size))
    return fail("artifact has no config section");
  auto config = decodeConfig(data, size);
  if (!config)
    return fail(config.message());
  a.config_ = *config;
  if (!section(SectionKind::Schedule, data, size))
    return fail("artifact has no schedule section");
  auto schedule = decodeSchedule(data, size);
  if (!schedule)
    return fail(schedule.message());
  a.schedule_ = schedule.take();
  if (Status s = validateSchedule(a.schedule_, a.config_); !s)
    return fail(s.message());
  if (section(SectionKind::PrefillSchedule, data, size)) {
    auto prefill = decodeSchedule(data, size);
    if (!prefill)
      return fail("prefill " + prefill.message());
    a.prefill_ = prefill.take();
    a.hasPrefill_ = true;
    if (Status s = validateSchedule(a.prefill_, a.config_); !s)
      return fail("prefill " + s.message());
    if (a.prefill_.kvBytes != a.schedule_.kvBytes ||
        a.prefill_.weightBytes != a.schedule_.weightBytes)
      return fail("the prefill and decode schedules disagree on the weights or the KV cache");
  }
  if (section(SectionKind::BatchSchedule, data, size)) {
    auto batch = decodeBatchSchedule(data, size);
    if (!batch)
      return fail(batch.message());
    a.batch_ = batch.take();
    a.hasBatch_ = true;
    if (Status s = validateSchedule(a.batch_.schedule, a.config_, &a.batch_.layout); !s)
      return fail("batch " + s.message());
    if (a.batch_.schedule.weightBytes != a.schedule_.weightBytes)
      return fail("the batch and decode schedules disagree on the weights");
  }
  if (section(SectionKind::Target, data, size)) {
    a.target_.assign(reinterpret_cast<const char *>(data), size);
    // Printed in messages and --verbose: printable ASCII only.
    for (char c : a.target_)
      if (c < 0x20 || c > 0x7e)
        return fail("target section is corrupt (it holds byte " + std::to_string(uint8_t(c)) +
                    ", not text)");
  }
  if (section(SectionKind::ChatTemplate, data, size)) {
    std::string_view text(reinterpret_cast<const char *>(data), size);
    if (Status s = checkChatTemplateText(text); !s)
      return fail("chat template section: " + s.message());
    a.chatTemplate_ = std::string(text);
  }
  if (!section(SectionKind::Tokenizer, a.tokenizer_, a.tokenizerSize_))
    return fail("artifact has no tokenizer section");
  // The kernels: a shared object for the CPU, or PTX for CUDA.
  if (section(SectionKind::GpuKernels, a.ptx_, a.ptxSize_)) {
    if (a.ptxSize_ < 16)
      return fail("artifact's PTX section is empty");
  } else if (!section(SectionKind::KernelLibrary, a.library_, a.librarySize_) ||
             a.librarySize_ < 64) {
    return fail("artifact has no kernel library");
  }
  size_t weightBytes;
  if (!section(SectionKind::Weights, a.weights_, weightBytes))
    return fail("artifact has no weights section");
  if (weightBytes != a.schedule_.weightBytes || reinterpret_cast<uintptr_t>(a.weights_) % 64 != 0)
    return fail("weights section does not match the schedule (" + std::to_string(weightBytes) +
                " bytes, schedule needs " + std::to_string(a.schedule_.weightBytes) + ")");
  if (pages == WeightPages::Copied && !a.isCuda()) {
    const size_t offset = size_t(a.weights_ - base);
    a.weightCopy_ = LargeBuffer::allocate(weightBytes);
    if (!a.weightCopy_)
      return fail("cannot allocate " + std::to_string(weightBytes) +
                  " bytes to copy the weights into (--mmap reads them in place)");
    if (Status s = a.file_.copyOut(offset, weightBytes, a.weightCopy_.data()); !s)
      return Status::error(s.message() + " (copying the weights)");
    a.weights_ = a.weightCopy_.data();
  }
  if (verifyWeights) {
    SectionEntry e;
    std::memcpy(&e, found[uint32_t(SectionKind::Weights)], sizeof e);
    if (checksum64(a.weights_, weightBytes) != e.checksum)
      return fail("section " + std::to_string(weightsIndex) + " is corrupt (checksum mismatch)");
  }
  if (section(SectionKind::WeightTable, data, size)) {
    auto table = decodeWeightTable(data, size, weightBytes);
    if (!table)
      return fail(table.message());
    a.weightTable_ = table.take();
  }
  if (section(SectionKind::KernelCosts, data, size)) {
    auto costs = decodeKernelCosts(data, size);
    if (!costs)
      return fail(costs.message());
    a.kernelCosts_ = costs.take();
  }
  return a;
}

std::string describeWeightPlacement(const Artifact &artifact) {
  if (artifact.weightPages() == WeightPages::Mapped)
    return "the artifact's mapping (--mmap)";
  char text[96];
  std::snprintf(text, sizeof text, "a copy in memory, %.1f of %.1f MB in huge pages",
                artifact.weightHugePageBytes() / 1e6, artifact.schedule().weightBytes / 1e6);
  return text;
}

} // namespace quill
