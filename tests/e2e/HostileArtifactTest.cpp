// Artifacts edited as a broken tool would leave them: every section checksum
// recomputed, so only the loader's own checks stand between an edit and an
// out-of-bounds write. Each edit must be refused before the first step, in
// one line, never run.
#include "TestSupport.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/device/CpuDevice.h"
#include "runtime/device/CudaDevice.h"
#include "runtime/support/ByteStream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

namespace quill::test {
namespace {

/// The sections of an artifact file, read straight from its table.
struct Section {
  uint32_t kind;
  std::vector<uint8_t> bytes;
};

std::vector<Section> readSections(const std::string &path) {
  std::string file = readFile(path);
  ArtifactHeader header;
  std::memcpy(&header, file.data(), sizeof header);
  std::vector<Section> sections;
  for (uint32_t i = 0; i < header.sectionCount; ++i) {
    SectionEntry e;
    std::memcpy(&e, file.data() + header.sectionTableOffset + i * sizeof e, sizeof e);
    const auto *begin = reinterpret_cast<const uint8_t *>(file.data()) + e.offset;
    sections.push_back({e.kind, std::vector<uint8_t>(begin, begin + e.size)});
  }
  return sections;
}

/// Writes `sections` as a well-formed file: fresh offsets and checksums.
std::string writeSections(const std::vector<Section> &sections, const std::string &name) {
  ArtifactBuilder builder;
  for (const Section &s : sections)
    builder.addSection(static_cast<SectionKind>(s.kind), s.bytes);
  std::string path = tempDir() + "/" + name + ".qm";
  Status written = builder.write(path);
  EXPECT_TRUE(written.isOk()) << written.message();
  return path;
}

Section &sectionOf(std::vector<Section> &sections, SectionKind kind) {
  for (Section &s : sections)
    if (s.kind == static_cast<uint32_t>(kind))
      return s;
  ADD_FAILURE() << "no section of kind " << static_cast<uint32_t>(kind);
  return sections.front();
}

/// Loads `path` and sets up the CPU device: the message of the first
/// refusal, or "" when everything was accepted.
std::string loadError(const std::string &path) {
  auto artifact = Artifact::open(path);
  if (!artifact)
    return artifact.message();
  tbb::task_arena arena(1);
  auto device = CpuDevice::create(*artifact, arena);
  return device ? "" : device.message();
}

/// A model with all three steps: decode, prefill chunks of 4, batch rows.
const std::string &goodArtifact() {
  static std::string path = compileSynthetic(llamaShape(64, 172, 2, 4, 2, 320, 32), "hostile",
                                             "--prefill-chunk 4 --batch-rows 4 --kv-block-size 8");
  return path;
}

/// A schedule section's schedule, edited and re-encoded.
using ScheduleEdit = std::function<void(Schedule &)>;

std::vector<uint8_t> editSchedule(SectionKind kind, const std::vector<uint8_t> &bytes,
                                  const ScheduleEdit &edit) {
  if (kind == SectionKind::BatchSchedule) {
    auto batch = decodeBatchSchedule(bytes.data(), bytes.size());
    EXPECT_TRUE(batch.isOk()) << batch.message();
    edit(batch->schedule);
    return encodeBatchSchedule(*batch);
  }
  auto schedule = decodeSchedule(bytes.data(), bytes.size());
  EXPECT_TRUE(schedule.isOk()) << schedule.message();
  edit(*schedule);
  return encodeSchedule(*schedule);
}

Schedule scheduleIn(SectionKind kind, const std::vector<uint8_t> &bytes) {
  Schedule copy;
  editSchedule(kind, bytes, [&](Schedule &s) { copy = s; });
  return copy;
}

const SectionKind kScheduleKinds[] = {SectionKind::Schedule, SectionKind::PrefillSchedule,
                                      SectionKind::BatchSchedule};

TEST(HostileArtifact, TheUneditedArtifactLoads) {
  ASSERT_FALSE(goodArtifact().empty());
  EXPECT_EQ(loadError(goodArtifact()), "");
  // Rewritten without an edit, it still loads: the edits below are the
  // only difference.
  EXPECT_EQ(loadError(writeSections(readSections(goodArtifact()), "unedited")), "");
}

TEST(HostileArtifact, EveryWorkCountEditIsRefused) {
  std::vector<Section> original = readSections(goodArtifact());
  for (SectionKind kind : kScheduleKinds) {
    const size_t count = scheduleIn(kind, sectionOf(original, kind).bytes).dispatches.size();
    ASSERT_GT(count, 3u);
    for (size_t i = 0; i < count; ++i)
      for (int64_t delta : {1, 64}) {
        std::vector<Section> sections = original;
        Section &s = sectionOf(sections, kind);
        s.bytes = editSchedule(kind, s.bytes,
                               [&](Schedule &schedule) { schedule.dispatches[i].work += delta; });
        std::string error = loadError(writeSections(sections, "work"));
        EXPECT_NE(error.find("work count"), std::string::npos)
            << "section " << int(kind) << " dispatch " << i << " +" << delta << ": " << error;
      }
  }
}

TEST(HostileArtifact, EveryBindingSizeAndSpaceEditIsRefused) {
  std::vector<Section> original = readSections(goodArtifact());
  for (SectionKind kind : kScheduleKinds) {
    Schedule schedule = scheduleIn(kind, sectionOf(original, kind).bytes);
    for (size_t i = 0; i < schedule.dispatches.size(); ++i)
      for (size_t b = 0; b < schedule.dispatches[i].bindings.size(); ++b) {
        // Smaller (the kernel still touches its whole range), or another
        // space (a write into the read-only weights).
        for (int variant = 0; variant < 2; ++variant) {
          std::vector<Section> sections = original;
          Section &s = sectionOf(sections, kind);
          s.bytes = editSchedule(kind, s.bytes, [&](Schedule &edited) {
            Binding &binding = edited.dispatches[i].bindings[b];
            if (variant == 0)
              binding.bytes -= 4;
            else
              binding.space = binding.space == MemorySpace::Weights ? MemorySpace::Scratch
                                                                    : MemorySpace::Weights;
          });
          std::string error = loadError(writeSections(sections, "binding"));
          EXPECT_NE(error, "") << "section " << int(kind) << " dispatch " << i << " binding " << b
                               << " variant " << variant;
        }
      }
  }
}

TEST(HostileArtifact, KernelIndicesAndWritesMasksAreChecked) {
  std::vector<Section> original = readSections(goodArtifact());
  std::vector<Section> sections = original;
  Section &s = sectionOf(sections, SectionKind::Schedule);
  s.bytes = editSchedule(SectionKind::Schedule, s.bytes, [](Schedule &schedule) {
    schedule.dispatches[2].kernel = uint32_t(schedule.kernels.size());
  });
  EXPECT_NE(loadError(writeSections(sections, "kernel")).find("dispatch 2 is malformed"),
            std::string::npos);
  sections = original;
  Section &w = sectionOf(sections, SectionKind::Schedule);
  w.bytes = editSchedule(SectionKind::Schedule, w.bytes,
                         [](Schedule &schedule) { schedule.dispatches[0].writes = 0; });
  EXPECT_NE(loadError(writeSections(sections, "writes")).find("writes mask"), std::string::npos);
}

TEST(HostileArtifact, UnitsPerLiveRowMustMatchTheKernels) {
  // The batch step's paged attention runs several units per live row
  // (slices of its kv heads): a schedule that claims another count (which
  // would leave some live rows' heads uncomputed, or make a one-unit
  // dispatch run more units than live rows) is refused by the contract.
  std::vector<Section> original = readSections(goodArtifact());
  Schedule batch =
      scheduleIn(SectionKind::BatchSchedule, sectionOf(original, SectionKind::BatchSchedule).bytes);
  int checked = 0, split = 0;
  for (size_t i = 0; i < batch.dispatches.size(); ++i) {
    const int64_t units = batch.dispatches[i].liveRowUnits;
    if (units == 0)
      continue;
    split += units > 1;
    std::vector<Section> sections = original;
    Section &s = sectionOf(sections, SectionKind::BatchSchedule);
    s.bytes = editSchedule(SectionKind::BatchSchedule, s.bytes, [&](Schedule &schedule) {
      schedule.dispatches[i].liveRowUnits = units > 1 ? 1 : 2;
    });
    EXPECT_NE(loadError(writeSections(sections, "units")).find("units per live row"),
              std::string::npos)
        << "dispatch " << i;
    ++checked;
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(split, 0) << "no dispatch splits its live rows";
}

TEST(HostileArtifact, ConfigAndBatchLayoutMustMatchTheKernels) {
  std::vector<Section> original = readSections(goodArtifact());
  auto withConfig = [&](const std::function<void(ModelConfig &)> &edit) {
    std::vector<Section> sections = original;
    Section &s = sectionOf(sections, SectionKind::Config);
    auto config = decodeConfig(s.bytes.data(), s.bytes.size());
    EXPECT_TRUE(config.isOk());
    edit(*config);
    s.bytes = encodeConfig(*config);
    return loadError(writeSections(sections, "config"));
  };
  // A longer context than the kernels' cache would put positions past its
  // end,
  // past the batch step's block tables, or (shorter) not the kernels' own.
  EXPECT_NE(withConfig([](ModelConfig &c) { c.seqLen = 33; }), "");
  std::string shorter = withConfig([](ModelConfig &c) { c.seqLen = 31; });
  EXPECT_NE(shorter.find("context is 31, the kernels were compiled for 32"), std::string::npos)
      << shorter;
  // A smaller vocabulary: the logits no longer match (the schedule says so).
  EXPECT_NE(withConfig([](ModelConfig &c) { c.vocabSize = 319; }), "");
  // A cache type the kernels were not compiled for: the paged blocks would
  // be sized for half the bytes the kernels write.
  EXPECT_NE(withConfig([](ModelConfig &c) { c.kvType = KVType::F16; }), "");

  auto withLayout = [&](const std::function<void(BatchLayout &)> &edit) {
    std::vector<Section> sections = original;
    Section &s = sectionOf(sections, SectionKind::BatchSchedule);
    auto batch = decodeBatchSchedule(s.bytes.data(), s.bytes.size());
    EXPECT_TRUE(batch.isOk());
    edit(batch->layout);
    s.bytes = encodeBatchSchedule(*batch);
    return loadError(writeSections(sections, "layout"));
  };
  // Positions written where the kernels read token ids (and back).
  EXPECT_NE(withLayout([](BatchLayout &l) { std::swap(l.tokens, l.positions); }), "");
  EXPECT_NE(withLayout([](BatchLayout &l) { l.maxBlocks *= 2; }), "");
  EXPECT_NE(withLayout([](BatchLayout &l) { l.tableWidth += 1; }), "");
}

TEST(HostileArtifact, KernelsForACpuFeatureThisOneLacksAreRefused) {
  std::vector<Section> sections = readSections(goodArtifact());
  Section &target = sectionOf(sections, SectionKind::Target);
  std::string text(target.bytes.begin(), target.bytes.end());
  // The kernels ask for every extension the host has that LLVM may use:
  // AVX512-FP16 (vcvtph2psx, for f16 caches and weights) among them.
  EXPECT_EQ(text.find("avx512fp16") != std::string::npos, __builtin_cpu_supports("avx512fp16") != 0)
      << text;
  text += ",sse9"; // No CPU has it.
  target.bytes.assign(text.begin(), text.end());
  std::string error = loadError(writeSections(sections, "cpu-feature"));
  EXPECT_NE(error.find(": this CPU lacks sse9, which the kernels were compiled for; recompile "
                       "with --cpu"),
            std::string::npos)
      << error;
}

TEST(HostileArtifact, UnknownAndRepeatedSectionsAreRefused) {
  std::vector<Section> sections = readSections(goodArtifact());
  sections.push_back({99, std::vector<uint8_t>(8, 0)});
  EXPECT_NE(loadError(writeSections(sections, "unknown")).find("unknown kind 99"),
            std::string::npos);
  for (SectionKind kind : {SectionKind::Config, SectionKind::Schedule, SectionKind::Tokenizer,
                           SectionKind::BatchSchedule}) {
    sections = readSections(goodArtifact());
    sections.push_back(sectionOf(sections, kind));
    EXPECT_NE(loadError(writeSections(sections, "repeated")).find("repeats section kind"),
              std::string::npos)
        << int(kind);
  }
}

TEST(HostileArtifact, ChatTemplateSectionMustBeText) {
  auto withTemplate = [](const std::string &text, const std::string &name) {
    std::vector<Section> sections = readSections(goodArtifact());
    sections.push_back(
        {uint32_t(SectionKind::ChatTemplate), std::vector<uint8_t>(text.begin(), text.end())});
    return loadError(writeSections(sections, name));
  };
  EXPECT_EQ(withTemplate("{{ messages[0].content }}", "chat-ok"), "");
  // An overlong NUL at byte 3, a NUL at byte 2, one byte past the cap.
  EXPECT_NE(withTemplate("abc\xC0\x80", "chat-utf8").find("not UTF-8 text (byte 3)"),
            std::string::npos);
  EXPECT_NE(withTemplate(std::string("ab\0c", 4), "chat-nul").find("(byte 2)"), std::string::npos);
  EXPECT_NE(withTemplate(std::string((1 << 20) + 1, 'x'), "chat-big").find("more than the limit"),
            std::string::npos);
}

TEST(HostileArtifact, TheWeightTableMustFitTheWeights) {
  std::vector<Section> sections = readSections(goodArtifact());
  Section &s = sectionOf(sections, SectionKind::WeightTable);
  auto table = decodeWeightTable(s.bytes.data(), s.bytes.size(), UINT64_MAX);
  ASSERT_TRUE(table.isOk()) << table.message();
  ASSERT_FALSE(table->empty());
  // The last weight claimed one block further: past the section's end.
  WeightEntry &last = table->back();
  const WeightEncodingInfo &info = weightEncodingInfo(last.encoding);
  last.elements += uint64_t(info.blockElements) * 4096;
  last.bytes += uint64_t(info.blockBytes) * 4096;
  s.bytes = encodeWeightTable(*table);
  std::string error = loadError(writeSections(sections, "weight-table"));
  EXPECT_NE(error.find("weight table: '" + last.name + "' overlaps another weight or lies outside"),
            std::string::npos)
      << error;
}

TEST(HostileArtifact, RawBytesAreNeverEchoed) {
  std::vector<Section> sections = readSections(goodArtifact());
  Section &s = sectionOf(sections, SectionKind::Schedule);
  s.bytes = editSchedule(SectionKind::Schedule, s.bytes,
                         [](Schedule &schedule) { schedule.kernels[0] = "k\x1b[2J\xff"; });
  std::string error = loadError(writeSections(sections, "name"));
  EXPECT_NE(error.find("not a symbol name"), std::string::npos) << error;
  for (char c : error)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << int(uint8_t(c)) << " in " << error;
}

TEST(HostileArtifact, QuillRunRefusesAnEditInOneLine) {
  std::vector<Section> sections = readSections(goodArtifact());
  Section &s = sectionOf(sections, SectionKind::Schedule);
  s.bytes = editSchedule(SectionKind::Schedule, s.bytes,
                         [](Schedule &schedule) { schedule.dispatches[3].work += 1; });
  CommandResult r =
      run(quote(tool("quill-run")) + " " + quote(writeSections(sections, "tool")) + " -n 4");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("dispatch 3"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

// The same checks for a CUDA artifact: its PTX states the contracts as
// .global arrays, which the device reads back through the driver before
// the first launch. The stand-in driver (tests/mock_cuda) holds them as
// the real one does, in device memory.

/// The model of goodArtifact() compiled for CUDA (decode and prefill).
const std::string &goodCudaArtifact() {
  static std::string path = compileSynthetic(llamaShape(64, 172, 2, 4, 2, 320, 32), "hostile-cuda",
                                             "--target=cuda --prefill-chunk 4");
  return path;
}

/// Loads `path` and sets up the CUDA device on the stand-in driver: the
/// message of the first refusal, or "" when everything was accepted.
std::string cudaLoadError(const std::string &path) {
  const char *before = std::getenv("QUILL_CUDA_DRIVER");
  std::string saved = before ? before : "";
  setenv("QUILL_CUDA_DRIVER", QUILL_MOCK_CUDA, 1);
  std::string error;
  if (auto artifact = Artifact::open(path); !artifact)
    error = artifact.message();
  else if (auto device = CudaDevice::create(*artifact); !device)
    error = device.message();
  if (before)
    setenv("QUILL_CUDA_DRIVER", saved.c_str(), 1);
  else
    unsetenv("QUILL_CUDA_DRIVER");
  return error;
}

const SectionKind kCudaScheduleKinds[] = {SectionKind::Schedule, SectionKind::PrefillSchedule};

TEST(HostileCudaArtifact, TheUneditedArtifactLoadsAndItsPtxStatesEveryContract) {
  ASSERT_FALSE(goodCudaArtifact().empty());
  EXPECT_EQ(cudaLoadError(goodCudaArtifact()), "");
  std::vector<Section> sections = readSections(goodCudaArtifact());
  const std::vector<uint8_t> &ptx = sectionOf(sections, SectionKind::GpuKernels).bytes;
  std::string text(ptx.begin(), ptx.end());
  EXPECT_NE(text.find(".visible .global .align 8 .b64 quill_model_limits[11] = {1, 320, 32, 4, "),
            std::string::npos);
  for (SectionKind kind : kCudaScheduleKinds) {
    Schedule schedule = scheduleIn(kind, sectionOf(sections, kind).bytes);
    for (const Dispatch &d : schedule.dispatches) {
      // Version, work, live rows, writes mask, binding count: as dispatched
      // (the words as unsigned 64-bit values).
      std::string words = "quill_contract_" + schedule.kernels[d.kernel] + "[" +
                          std::to_string(5 + 2 * d.bindings.size()) + "] = {1, " +
                          std::to_string(d.work) + ", 0, " + std::to_string(d.writes) + ", " +
                          std::to_string(d.bindings.size()) + ", ";
      EXPECT_NE(text.find(words), std::string::npos) << words;
    }
  }
}

TEST(HostileCudaArtifact, EveryWorkCountAndBindingEditIsRefused) {
  std::vector<Section> original = readSections(goodCudaArtifact());
  for (SectionKind kind : kCudaScheduleKinds) {
    const size_t count = scheduleIn(kind, sectionOf(original, kind).bytes).dispatches.size();
    ASSERT_GT(count, 3u);
    for (size_t i = 0; i < count; ++i) {
      auto edited = [&](const ScheduleEdit &edit) {
        std::vector<Section> sections = original;
        Section &s = sectionOf(sections, kind);
        s.bytes = editSchedule(kind, s.bytes, edit);
        return cudaLoadError(writeSections(sections, "cuda-edit"));
      };
      std::string work = edited([&](Schedule &schedule) { schedule.dispatches[i].work += 1; });
      EXPECT_NE(work.find("work count"), std::string::npos)
          << "section " << int(kind) << " dispatch " << i << ": " << work;
      // Smaller stays inside the memory plan: only the contract sees it.
      std::string bytes =
          edited([&](Schedule &schedule) { schedule.dispatches[i].bindings[0].bytes -= 4; });
      EXPECT_NE(bytes.find("binding 0 bytes"), std::string::npos)
          << "section " << int(kind) << " dispatch " << i << ": " << bytes;
    }
  }
}

TEST(HostileCudaArtifact, ConfigMustMatchThePtxAndContractsMustBeThere) {
  std::vector<Section> original = readSections(goodCudaArtifact());
  std::vector<Section> sections = original;
  Section &c = sectionOf(sections, SectionKind::Config);
  auto config = decodeConfig(c.bytes.data(), c.bytes.size());
  ASSERT_TRUE(config.isOk());
  config->seqLen = 31;
  c.bytes = encodeConfig(*config);
  std::string shorter = cudaLoadError(writeSections(sections, "cuda-config"));
  EXPECT_NE(shorter.find("context is 31, the kernels were compiled for 32"), std::string::npos)
      << shorter;

  // PTX without the contracts (as an older compiler wrote it): refused.
  sections = original;
  std::vector<uint8_t> &ptx = sectionOf(sections, SectionKind::GpuKernels).bytes;
  std::string text(ptx.begin(), ptx.end());
  size_t contracts = text.find(".visible .global .align 8 .b64 quill_");
  ASSERT_NE(contracts, std::string::npos);
  ptx.assign(text.begin(), text.begin() + contracts);
  std::string none = cudaLoadError(writeSections(sections, "cuda-no-contracts"));
  EXPECT_NE(none.find("the PTX states no quill_"), std::string::npos) << none;

  // A contract that claims more bindings than it holds.
  sections = original;
  std::vector<uint8_t> &cut = sectionOf(sections, SectionKind::GpuKernels).bytes;
  text.assign(cut.begin(), cut.end());
  size_t first = text.find("quill_contract_");
  size_t open = text.find('[', first), close = text.find(']', first);
  size_t brace = text.find('{', first), end = text.find("};", first);
  ASSERT_TRUE(open < close && close < brace && brace < end);
  int words = std::stoi(text.substr(open + 1, close - open - 1));
  // Drop the last binding pair from the initializer and the length.
  std::string body = text.substr(brace + 1, end - brace - 1);
  for (int i = 0; i < 2; ++i)
    body.erase(body.rfind(','));
  text = text.substr(0, open + 1) + std::to_string(words - 2) + "] = {" + body + text.substr(end);
  cut.assign(text.begin(), text.end());
  std::string partial = cudaLoadError(writeSections(sections, "cuda-partial"));
  EXPECT_NE(partial.find("is not whole"), std::string::npos) << partial;
}

TEST(HostileCudaArtifact, QuillRunRefusesAnEditInOneLine) {
  std::vector<Section> sections = readSections(goodCudaArtifact());
  Section &s = sectionOf(sections, SectionKind::Schedule);
  s.bytes = editSchedule(SectionKind::Schedule, s.bytes,
                         [](Schedule &schedule) { schedule.dispatches[3].work += 1; });
  CommandResult r =
      run("QUILL_CUDA_DRIVER=" + quote(QUILL_MOCK_CUDA) + " " + quote(tool("quill-run")) + " " +
          quote(writeSections(sections, "cuda-tool")) + " --device cuda -n 4");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("dispatch 3"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

} // namespace
} // namespace quill::test
