// Encoding, decoding and validation of the artifact's sections.
#include "runtime/artifact/ArtifactFormat.h"

#include "runtime/support/ByteStream.h"
#include "runtime/support/ReadFile.h"
#include "runtime/support/Utf8.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace quill {

Status checkChatTemplateText(std::string_view text) {
  if (text.size() > kMaxChatTemplateBytes)
    return Status::error("the chat template is " + std::to_string(text.size()) +
                         " bytes, more than the limit of " + std::to_string(kMaxChatTemplateBytes));
  size_t bad = std::min(firstIllFormedUtf8(text), text.find('\0'));
  if (bad != std::string_view::npos)
    return Status::error("the chat template is not UTF-8 text (byte " + std::to_string(bad) + ")");
  return Status::ok();
}

std::vector<uint8_t> encodeConfig(const ModelConfig &c) {
  ByteWriter w;
  for (int32_t v : {c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen,
                    c.bosId, c.eosId})
    w.put<int32_t>(v);
  w.put<float>(c.ropeTheta);
  w.put<float>(c.normEps);
  w.put<uint8_t>(c.sharedClassifier ? 1 : 0);
  // Version 6: the Llama-family features. The rotary frequencies travel as
  // the rope_freqs weight, which only the kernels read.
  w.put<int32_t>(c.headDimension);
  w.put<uint8_t>(c.qkvBias ? 1 : 0);
  w.put<uint8_t>(c.qkNorm ? 1 : 0);
  w.put<int32_t>(c.slidingWindow);
  w.put<float>(c.ropeAttentionFactor);
  w.put<uint8_t>(c.addBos ? 1 : 0);
  w.put<uint32_t>(static_cast<uint32_t>(c.extraEosIds.size()));
  for (int32_t id : c.extraEosIds)
    w.put<int32_t>(id);
  // Version 9: the KV cache's element type.
  w.put<uint8_t>(static_cast<uint8_t>(c.kvType));
  return std::move(w.bytes());
}

ErrorOr<ModelConfig> decodeConfig(const uint8_t *data, size_t size) {
  ByteReader r(data, size);
  ModelConfig c;
  for (int32_t *v : {&c.dim, &c.hiddenDim, &c.nLayers, &c.nHeads, &c.nKvHeads, &c.vocabSize,
                     &c.seqLen, &c.bosId, &c.eosId})
    *v = r.get<int32_t>();
  c.ropeTheta = r.get<float>();
  c.normEps = r.get<float>();
  c.sharedClassifier = r.get<uint8_t>() != 0;
  c.headDimension = r.get<int32_t>();
  c.qkvBias = r.get<uint8_t>() != 0;
  c.qkNorm = r.get<uint8_t>() != 0;
  c.slidingWindow = r.get<int32_t>();
  c.ropeAttentionFactor = r.get<float>();
  c.addBos = r.get<uint8_t>() != 0;
  uint32_t extraEos = r.get<uint32_t>();
  if (!r.ok() || extraEos > r.remaining() / sizeof(int32_t))
    return Status::error("config section is truncated");
  for (uint32_t i = 0; i < extraEos; ++i)
    c.extraEosIds.push_back(r.get<int32_t>());
  uint8_t kvType = r.get<uint8_t>();
  if (!r.ok())
    return Status::error("config section is truncated");
  if (kvType > uint8_t(kLastKVType))
    return Status::error("config section names an unknown KV-cache type " + std::to_string(kvType));
  c.kvType = KVType(kvType);
  for (int32_t id : c.extraEosIds)
    if (id < 0 || id >= c.vocabSize)
      return Status::error("config section holds an end token outside the vocabulary");
  if (c.dim <= 0 || c.hiddenDim <= 0 || c.nLayers <= 0 || c.nHeads <= 0 || c.nKvHeads <= 0 ||
      c.vocabSize <= 0 || c.seqLen <= 0 || c.headDimension < 0 || c.headDimension > 1024 ||
      (c.headDimension == 0 && c.dim % c.nHeads != 0) || c.headDim() % 2 != 0 ||
      c.nHeads % c.nKvHeads != 0 || c.slidingWindow < 0 || !std::isfinite(c.ropeAttentionFactor) ||
      !(c.ropeAttentionFactor > 0) || !std::isfinite(c.ropeTheta) || !(c.normEps > 0) ||
      c.bosId < 0 || c.bosId >= c.vocabSize || c.eosId < 0 || c.eosId >= c.vocabSize)
    return Status::error("config section holds impossible dimensions");
  if (c.kvType == KVType::Q8_0 && c.headDim() % int32_t(kQ8BlockElements) != 0)
    return Status::error("config section holds a q8_0 KV cache with heads of " +
                         std::to_string(c.headDim()) + ", not whole blocks of 32");
  return c;
}

bool isSymbolName(const std::string &name) {
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '$'))
      return false;
  return true;
}

static void putBinding(ByteWriter &w, const Binding &b) {
  w.put<uint32_t>(static_cast<uint32_t>(b.space));
  w.put<uint64_t>(b.offset);
  w.put<uint64_t>(b.bytes);
}

static Binding getBinding(ByteReader &r) {
  Binding b;
  b.space = static_cast<MemorySpace>(r.get<uint32_t>());
  b.offset = r.get<uint64_t>();
  b.bytes = r.get<uint64_t>();
  return b;
}

std::vector<uint8_t> encodeSchedule(const Schedule &s) {
  ByteWriter w;
  w.put<uint64_t>(s.scratchBytes);
  w.put<uint64_t>(s.kvBytes);
  w.put<uint64_t>(s.weightBytes);
  w.put<uint64_t>(s.inputBytes);
  w.put<int32_t>(s.tokens);
  putBinding(w, s.logits);
  w.put<uint32_t>(static_cast<uint32_t>(s.kernels.size()));
  for (const std::string &name : s.kernels)
    w.putString(name);
  w.put<uint32_t>(static_cast<uint32_t>(s.dispatches.size()));
  for (const Dispatch &d : s.dispatches) {
    w.put<uint32_t>(d.kernel);
    w.put<int64_t>(d.work);
    w.put<int64_t>(d.grain);
    w.put<uint32_t>(static_cast<uint32_t>(d.liveRowUnits));
    w.put<uint64_t>(d.writes);
    w.put<uint32_t>(static_cast<uint32_t>(d.bindings.size()));
    for (const Binding &b : d.bindings)
      putBinding(w, b);
  }
  return std::move(w.bytes());
}

ErrorOr<Schedule> decodeSchedule(const uint8_t *data, size_t size) {
  ByteReader r(data, size);
  Schedule s;
  s.scratchBytes = r.get<uint64_t>();
  s.kvBytes = r.get<uint64_t>();
  s.weightBytes = r.get<uint64_t>();
  s.inputBytes = r.get<uint64_t>();
  s.tokens = r.get<int32_t>();
  s.logits = getBinding(r);
  uint32_t kernelCount = r.get<uint32_t>();
  // Every entry takes at least 4 bytes: a corrupt count cannot make us
  // reserve more than the section could hold.
  if (!r.ok() || kernelCount > r.remaining() / 4)
    return Status::error("schedule section is truncated or corrupt");
  for (uint32_t i = 0; i < kernelCount; ++i) {
    s.kernels.push_back(r.getString(4096));
    // Kernel names are symbols: never echo other bytes into an error line.
    if (!r.ok() || s.kernels.back().empty() || !isSymbolName(s.kernels.back()))
      return Status::error("schedule section is truncated or corrupt (kernel " + std::to_string(i) +
                           " is not a symbol name)");
  }
  uint32_t dispatchCount = r.get<uint32_t>();
  if (!r.ok() || dispatchCount > r.remaining() / 36)
    return Status::error("schedule section is truncated or corrupt");
  for (uint32_t i = 0; i < dispatchCount; ++i) {
    Dispatch d;
    d.kernel = r.get<uint32_t>();
    d.work = r.get<int64_t>();
    d.grain = r.get<int64_t>();
    // Units per live row: 0 (not a live-row dispatch) or at most the
    // work (the kernel's contract holds the exact count).
    uint32_t rowUnits = r.get<uint32_t>();
    if (rowUnits != 0 && (d.work <= 0 || rowUnits > d.work))
      return Status::error("schedule section is truncated or corrupt");
    d.liveRowUnits = rowUnits;
    d.writes = r.get<uint64_t>();
    uint32_t bindingCount = r.get<uint32_t>();
    if (!r.ok() || bindingCount > r.remaining() / 20)
      return Status::error("schedule section is truncated or corrupt");
    for (uint32_t j = 0; j < bindingCount; ++j)
      d.bindings.push_back(getBinding(r));
    s.dispatches.push_back(std::move(d));
  }
  if (!r.ok() || !r.atEnd())
    return Status::error("schedule section is truncated or corrupt");
  return s;
}

std::vector<uint8_t> encodeBatchSchedule(const BatchSchedule &batch) {
  const BatchLayout &l = batch.layout;
  ByteWriter w;
  for (int32_t v : {l.rows, l.blockSize, l.tableWidth, l.maxBlocks, l.sections})
    w.put<int32_t>(v);
  w.put<uint64_t>(l.blockBytes);
  for (const Binding *b : {&l.tokens, &l.positions, &l.tables})
    putBinding(w, *b);
  std::vector<uint8_t> bytes = std::move(w.bytes());
  std::vector<uint8_t> schedule = encodeSchedule(batch.schedule);
  bytes.insert(bytes.end(), schedule.begin(), schedule.end());
  return bytes;
}

ErrorOr<BatchSchedule> decodeBatchSchedule(const uint8_t *data, size_t size) {
  constexpr size_t kLayoutBytes = 5 * 4 + 8 + 3 * 20;
  if (size < kLayoutBytes)
    return Status::error("batch schedule section is truncated or corrupt");
  ByteReader r(data, kLayoutBytes);
  BatchSchedule batch;
  BatchLayout &l = batch.layout;
  for (int32_t *v : {&l.rows, &l.blockSize, &l.tableWidth, &l.maxBlocks, &l.sections})
    *v = r.get<int32_t>();
  l.blockBytes = r.get<uint64_t>();
  for (Binding *b : {&l.tokens, &l.positions, &l.tables})
    *b = getBinding(r);
  if (!r.ok())
    return Status::error("batch schedule section is truncated or corrupt");
  auto schedule = decodeSchedule(data + kLayoutBytes, size - kLayoutBytes);
  if (!schedule)
    return Status::error("batch " + schedule.message());
  batch.schedule = schedule.take();
  return batch;
}

Status validateSchedule(const Schedule &s, const ModelConfig &config, const BatchLayout *batch) {
  auto inside = [&](const Binding &b) {
    if (b.space == MemorySpace::KVPool)
      return batch && b.offset < uint64_t(batch->sections) && b.bytes == batch->blockBytes;
    uint64_t limit = b.space == MemorySpace::Weights   ? s.weightBytes
                     : b.space == MemorySpace::KVCache ? s.kvBytes
                     : b.space == MemorySpace::Scratch ? s.scratchBytes
                     : b.space == MemorySpace::Input   ? s.inputBytes
                                                       : 0;
    return b.bytes > 0 && b.offset <= limit && b.bytes <= limit - b.offset;
  };
  if (s.dispatches.empty() || s.kernels.empty())
    return Status::error("schedule has no kernels");
  if (batch) {
    const BatchLayout &l = *batch;
    uint64_t rowInts = uint64_t(l.rows) * sizeof(int32_t);
    if (l.rows < 1 || l.rows > 4096 || l.blockSize < 1 || l.sections != 2 * config.nLayers ||
        l.maxBlocks < 2 || uint64_t(l.tableWidth) * l.blockSize < uint64_t(config.seqLen) ||
        l.blockBytes != uint64_t(l.blockSize) * config.kvRowBytes() || l.tokens.bytes != rowInts ||
        l.positions.bytes != rowInts || l.tables.bytes != rowInts * l.tableWidth ||
        !inside(l.tokens) || !inside(l.positions) || !inside(l.tables))
      return Status::error("layout does not match the model");
  } else if (s.tokens < 1 || s.tokens > config.seqLen ||
             (s.tokens > 1 && s.inputBytes != uint64_t(s.tokens) * sizeof(int32_t))) {
    return Status::error("schedule's token count does not match its input");
  }
  for (size_t i = 0; i < s.dispatches.size(); ++i) {
    const Dispatch &d = s.dispatches[i];
    if (d.kernel >= s.kernels.size() || d.work <= 0 || d.grain <= 0 || (d.liveRowUnits && !batch) ||
        d.bindings.empty() || d.bindings.size() > kMaxBindingsPerDispatch)
      return Status::error("schedule dispatch " + std::to_string(i) + " is malformed");
    for (const Binding &b : d.bindings) {
      if (!inside(b))
        return Status::error("schedule dispatch " + std::to_string(i) +
                             " binds memory outside the plan");
      // The batch step's inputs are the rows the runtime writes, no other
      // range of its input buffer.
      auto same = [&](const Binding &l) { return b.offset == l.offset && b.bytes == l.bytes; };
      if (batch && b.space == MemorySpace::Input && !same(batch->tokens) &&
          !same(batch->positions) && !same(batch->tables))
        return Status::error("schedule dispatch " + std::to_string(i) +
                             " binds input that is not the layout's tokens, positions or tables");
    }
  }
  uint64_t logitRows = batch ? uint64_t(batch->rows) : 1;
  if (s.logits.space != MemorySpace::Scratch || !inside(s.logits) ||
      s.logits.bytes != logitRows * config.vocabSize * sizeof(float))
    return Status::error("schedule's logits do not hold one float per vocabulary entry");
  return Status::ok();
}

void ArtifactBuilder::addSection(SectionKind kind, std::vector<uint8_t> bytes) {
  uint64_t size = bytes.size();
  auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  sections_.push_back({kind, size, [shared](const SectionSink &sink) {
                         sink(shared->data(), shared->size());
                         return Status::ok();
                       }});
}

void ArtifactBuilder::addSection(SectionKind kind, uint64_t size, SectionProducer produce) {
  sections_.push_back({kind, size, std::move(produce)});
}

Status ArtifactBuilder::write(const std::string &path) const {
  ArtifactHeader header{};
  std::memcpy(header.magic, kArtifactMagic, sizeof header.magic);
  header.version = kArtifactVersion;
  header.sectionCount = static_cast<uint32_t>(sections_.size());
  header.sectionTableOffset = sizeof(ArtifactHeader);
  std::vector<SectionEntry> table(sections_.size());
  uint64_t offset = sizeof(ArtifactHeader) + table.size() * sizeof(SectionEntry);
  for (size_t i = 0; i < sections_.size(); ++i) {
    uint64_t align = sections_[i].kind == SectionKind::Weights ? kWeightsAlignment : 64;
    offset = (offset + align - 1) / align * align;
    table[i] = {static_cast<uint32_t>(sections_[i].kind), 0, offset, sections_[i].size, 0};
    offset += sections_[i].size;
  }
  header.fileSize = offset;

  // Written beside `path` under a temporary name and renamed once complete,
  // so a full disk, a file-size limit or a kill never leaves half an
  // artifact under the output name. A rename would replace whatever is
  // there: a device (as root, -o /dev/null would become a regular file), a
  // pipe or a directory is refused instead.
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode))
    return Status::error(path + ": not a regular file; an artifact is written to a file (finished "
                                "beside it, then renamed into place)");
  std::string temp = path + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return Status::error(path + ": cannot create a file beside it: " + std::strerror(errno));
  std::FILE *file = ::fdopen(fd, "wb");
  if (!file) {
    ::close(fd);
    std::remove(temp.c_str());
    return Status::error(path + ": cannot open for writing: " + std::strerror(errno));
  }
  // Header and table are written last, once the checksums are known.
  bool ok = std::fseek(file, static_cast<long>(table.empty() ? sizeof header : table[0].offset),
                       SEEK_SET) == 0;
  uint64_t written = table.empty() ? sizeof header : table[0].offset;
  static const uint8_t zeros[kWeightsAlignment] = {};
  Status produced = Status::ok();
  for (size_t i = 0; ok && i < sections_.size(); ++i) {
    ok = std::fwrite(zeros, 1, table[i].offset - written, file) == table[i].offset - written;
    Checksum64 checksum(sections_[i].size);
    uint64_t count = 0;
    SectionSink sink = [&](const void *data, size_t size) {
      ok = ok && std::fwrite(data, 1, size, file) == size;
      checksum.update(static_cast<const uint8_t *>(data), size);
      count += size;
    };
    produced = sections_[i].produce(sink);
    if (!produced)
      break;
    if (count != sections_[i].size) {
      produced = Status::error(path + ": section " + std::to_string(i) + " produced " +
                               std::to_string(count) + " bytes, expected " +
                               std::to_string(sections_[i].size));
      break;
    }
    table[i].checksum = checksum.finish();
    written = table[i].offset + sections_[i].size;
  }
  header.sectionTableChecksum = checksum64(reinterpret_cast<const uint8_t *>(table.data()),
                                           table.size() * sizeof(SectionEntry));
  ok = ok && produced && std::fseek(file, 0, SEEK_SET) == 0 &&
       std::fwrite(&header, sizeof header, 1, file) == 1 &&
       std::fwrite(table.data(), sizeof(SectionEntry), table.size(), file) == table.size();
  ok = ok && std::fflush(file) == 0 && ::fsync(fd) == 0;
  int error = ok ? 0 : errno;
  ok = (std::fclose(file) == 0) && ok;
  if (!ok && !error)
    error = errno;
  if (!produced) {
    std::remove(temp.c_str());
    return produced;
  }
  if (!ok) {
    std::remove(temp.c_str());
    return Status::error(path + ": write failed: " + std::strerror(error ? error : EIO));
  }
  // mkstemp creates the file 0600; an artifact is as readable as any output.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp.c_str(), 0666 & ~mask);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    error = errno;
    std::remove(temp.c_str());
    return Status::error(
        path + ": cannot rename the finished artifact into place: " + std::strerror(error));
  }
  return Status::ok();
}

} // namespace quill
