// The artifact's section encodings and the loader's checks, on artifacts
// assembled here (no compiler involved).
#include "runtime/artifact/Artifact.h"
#include "runtime/support/ByteStream.h"
#include "runtime/support/ProcessMappings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

namespace quill {
namespace {

ModelConfig tinyConfig() {
  ModelConfig c;
  c.dim = 8, c.hiddenDim = 16, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  c.vocabSize = 4, c.seqLen = 8;
  return c;
}

Schedule tinySchedule() {
  Schedule s;
  s.scratchBytes = 128;
  s.kvBytes = 256;
  s.weightBytes = 64;
  s.logits = {MemorySpace::Scratch, 64, 16};
  s.kernels = {"k0", "k1"};
  s.dispatches.push_back({0, 1, 1, {{MemorySpace::Weights, 0, 64}, {MemorySpace::Scratch, 0, 32}}});
  s.dispatches.push_back(
      {1, 8, 4, {{MemorySpace::KVCache, 0, 256}, {MemorySpace::Scratch, 64, 16}}});
  return s;
}

/// Files the tests wrote, removed when the test program exits.
struct WrittenFiles {
  std::vector<std::string> paths;
  ~WrittenFiles() {
    for (const std::string &path : paths)
      std::remove(path.c_str());
  }
};
WrittenFiles written;

std::string writeArtifact(const Schedule &schedule, const ModelConfig &config) {
  static int counter = 0;
  std::string path = testing::TempDir() + "/quill-format-" + std::to_string(getpid()) + "-" +
                     std::to_string(counter++) + ".qm";
  written.paths.push_back(path);
  ArtifactBuilder builder;
  builder.addSection(SectionKind::Config, encodeConfig(config));
  builder.addSection(SectionKind::Tokenizer, std::vector<uint8_t>(16, 1));
  builder.addSection(SectionKind::Schedule, encodeSchedule(schedule));
  builder.addSection(SectionKind::KernelLibrary, std::vector<uint8_t>(100, 7));
  builder.addSection(SectionKind::Weights, std::vector<uint8_t>(schedule.weightBytes, 3));
  EXPECT_TRUE(builder.write(path).isOk());
  return path;
}

TEST(ArtifactFormat, ConfigAndScheduleRoundTrip) {
  ModelConfig c = tinyConfig();
  std::vector<uint8_t> bytes = encodeConfig(c);
  auto decoded = decodeConfig(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.isOk()) << decoded.message();
  EXPECT_EQ(decoded->dim, 8);
  EXPECT_EQ(decoded->nKvHeads, 1);
  EXPECT_EQ(decoded->vocabSize, 4);

  std::vector<uint8_t> sched = encodeSchedule(tinySchedule());
  auto s = decodeSchedule(sched.data(), sched.size());
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(s->kernels, (std::vector<std::string>{"k0", "k1"}));
  ASSERT_EQ(s->dispatches.size(), 2u);
  EXPECT_EQ(s->dispatches[1].work, 8);
  EXPECT_EQ(s->dispatches[1].grain, 4);
  EXPECT_EQ(s->dispatches[1].bindings[0].space, MemorySpace::KVCache);
  EXPECT_TRUE(validateSchedule(*s, c).isOk());
}

TEST(ArtifactFormat, TheKVTypeRoundTripsAndAnUnknownOneIsRefused) {
  for (KVType type : {KVType::F32, KVType::F16, KVType::BF16}) {
    ModelConfig c = tinyConfig();
    c.kvType = type;
    std::vector<uint8_t> bytes = encodeConfig(c);
    auto decoded = decodeConfig(bytes.data(), bytes.size());
    ASSERT_TRUE(decoded.isOk()) << decoded.message();
    EXPECT_EQ(decoded->kvType, type);
    // kv width 4 (one kv head of dim 8 / 2 heads) in 4 or 2 bytes.
    EXPECT_EQ(decoded->kvRowBytes(), type == KVType::F32 ? 16u : 8u);
  }
  std::vector<uint8_t> bytes = encodeConfig(tinyConfig());
  bytes.back() = 4; // The KV type is the config's last byte.
  auto decoded = decodeConfig(bytes.data(), bytes.size());
  ASSERT_FALSE(decoded.isOk());
  EXPECT_EQ(decoded.message(), "config section names an unknown KV-cache type 4");
  EXPECT_EQ(parseKVType("bf16"), KVType::BF16);
  EXPECT_EQ(parseKVType("q8_0"), KVType::Q8_0);
  EXPECT_FALSE(parseKVType("q4_0").has_value());
}

TEST(ArtifactFormat, AQ8_0CacheTakes34BytesPer32ValuesAndNeedsWholeBlocksPerHead) {
  ModelConfig c = tinyConfig();
  c.dim = 128, c.nHeads = 4, c.nKvHeads = 2; // Heads of 32: kv width 64.
  c.kvType = KVType::Q8_0;
  std::vector<uint8_t> bytes = encodeConfig(c);
  auto decoded = decodeConfig(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.isOk()) << decoded.message();
  EXPECT_EQ(decoded->kvType, KVType::Q8_0);
  EXPECT_EQ(decoded->kvRowBytes(), 2u * 34u); // Two blocks: an fp16 scale and 32 int8 each.
  EXPECT_EQ(decoded->kvBytesPerToken(), 2u * uint64_t(c.nLayers) * 68u);
  // Heads of 4 (tinyConfig's) cannot hold whole blocks: a corrupt artifact.
  ModelConfig narrow = tinyConfig();
  narrow.kvType = KVType::Q8_0;
  bytes = encodeConfig(narrow);
  decoded = decodeConfig(bytes.data(), bytes.size());
  ASSERT_FALSE(decoded.isOk());
  EXPECT_EQ(decoded.message(),
            "config section holds a q8_0 KV cache with heads of 4, not whole blocks of 32");
}

TEST(ArtifactFormat, EveryTruncationOfAScheduleIsAnError) {
  std::vector<uint8_t> sched = encodeSchedule(tinySchedule());
  for (size_t n = 0; n < sched.size(); ++n)
    EXPECT_FALSE(decodeSchedule(sched.data(), n).isOk()) << n;
  std::vector<uint8_t> config = encodeConfig(tinyConfig());
  for (size_t n = 0; n < config.size(); ++n)
    EXPECT_FALSE(decodeConfig(config.data(), n).isOk()) << n;
}

TEST(ArtifactFormat, ScheduleValidationCatchesOutOfPlanBindings) {
  ModelConfig c = tinyConfig();
  Schedule s = tinySchedule();
  s.dispatches[0].bindings[1].offset = 120; // 120 + 32 > 128 bytes of scratch.
  EXPECT_NE(validateSchedule(s, c).message().find("outside the plan"), std::string::npos);
  s = tinySchedule();
  s.dispatches[1].kernel = 5;
  EXPECT_NE(validateSchedule(s, c).message().find("malformed"), std::string::npos);
  s = tinySchedule();
  s.logits.bytes = 12; // Not 4 floats.
  EXPECT_NE(validateSchedule(s, c).message().find("logits"), std::string::npos);
}

TEST(ArtifactFormat, LoaderAcceptsAGoodFileAndMapsWeightsAligned) {
  std::string path = writeArtifact(tinySchedule(), tinyConfig());
  auto artifact = Artifact::open(path);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  EXPECT_EQ(artifact->config().dim, 8);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(artifact->weights()) % 4096, 0u);
  EXPECT_EQ(artifact->weights()[0], 3);
  EXPECT_EQ(artifact->kernelLibrarySize(), 100u);
}

/// The file mapped where `address` lies ("" for anonymous memory), or "?"
/// when no mapping holds it.
std::string mappedFileOf(const void *address) {
  MappingEntry entry = mappingOf(address);
  return entry.found ? entry.path : "?";
}

TEST(ArtifactFormat, CopiedWeightsAreACheckedCopyOfTheFile) {
  const Schedule schedule = tinySchedule();
  std::string path = writeArtifact(schedule, tinyConfig());
  auto mapped = Artifact::open(path);
  auto copied = Artifact::open(path, /*verifyWeights=*/true, WeightPages::Copied);
  ASSERT_TRUE(mapped.isOk()) << mapped.message();
  ASSERT_TRUE(copied.isOk()) << copied.message();
  EXPECT_EQ(mapped->weightPages(), WeightPages::Mapped);
  EXPECT_EQ(copied->weightPages(), WeightPages::Copied);
  // The mapped weights lie in the file's mapping, the copied ones in
  // anonymous memory.
  const std::string fileName = path.substr(path.rfind('/') + 1);
  EXPECT_NE(mappedFileOf(mapped->weights()).find(fileName), std::string::npos)
      << mappedFileOf(mapped->weights());
  EXPECT_EQ(mappedFileOf(copied->weights()), "");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copied->weights()) % 4096, 0u);
  ASSERT_EQ(std::memcmp(copied->weights(), mapped->weights(), schedule.weightBytes), 0);

  // A flipped weight byte is caught on the copy, with the mapped load's line.
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  size_t at = bytes.find(std::string(schedule.weightBytes, char(3)));
  ASSERT_NE(at, std::string::npos);
  bytes[at + schedule.weightBytes / 2] ^= 0x10;
  std::string broken = path + ".weights";
  std::ofstream(broken, std::ios::binary) << bytes;
  auto brokenMapped = Artifact::open(broken);
  auto brokenCopied = Artifact::open(broken, true, WeightPages::Copied);
  ASSERT_FALSE(brokenMapped.isOk());
  ASSERT_FALSE(brokenCopied.isOk());
  EXPECT_EQ(brokenCopied.message(), brokenMapped.message());
  EXPECT_NE(brokenCopied.message().find("checksum mismatch"), std::string::npos);
  // --no-verify loads it, flipped byte and all.
  auto unchecked = Artifact::open(broken, false, WeightPages::Copied);
  ASSERT_TRUE(unchecked.isOk()) << unchecked.message();
  EXPECT_EQ(unchecked->weights()[schedule.weightBytes / 2], 3 ^ 0x10);
  std::remove(broken.c_str());
  std::remove(path.c_str());
}

TEST(ArtifactFormat, HugePageBytesOfCopiedWeightsNeverExceedTheWeights) {
  // 3 MiB + 64 of weights: the copy is mapped as 4 MiB of whole huge pages,
  // but only the weights' bytes may be reported as weights in huge pages.
  Schedule schedule = tinySchedule();
  schedule.weightBytes = (uint64_t(3) << 20) + 64;
  std::string path = writeArtifact(schedule, tinyConfig());
  auto copied = Artifact::open(path, /*verifyWeights=*/true, WeightPages::Copied);
  ASSERT_TRUE(copied.isOk()) << copied.message();
  EXPECT_LE(copied->weightHugePageBytes(), schedule.weightBytes);
  std::printf("%zu of %llu weight bytes in huge pages\n", copied->weightHugePageBytes(),
              static_cast<unsigned long long>(schedule.weightBytes));
  std::remove(path.c_str());
}

TEST(ArtifactFormat, LoaderRejectsEveryTruncationAndEveryByteFlip) {
  std::string path = writeArtifact(tinySchedule(), tinyConfig());
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  std::string broken = path + ".broken";
  for (size_t n = 0; n < bytes.size(); n += 7) {
    std::ofstream(broken, std::ios::binary) << bytes.substr(0, n);
    auto a = Artifact::open(broken);
    EXPECT_FALSE(a.isOk()) << "truncated at " << n;
    if (!a.isOk()) {
      EXPECT_EQ(a.message().rfind(broken, 0), 0u) << "the message names the file";
    }
  }
  int accepted = 0;
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x01);
    std::ofstream(broken, std::ios::binary) << flipped;
    accepted += Artifact::open(broken).isOk();
  }
  // Only flips in the zero padding between sections may go unnoticed.
  size_t padding = 0;
  for (char c : bytes)
    padding += c == 0;
  EXPECT_LE(size_t(accepted), padding);
  std::remove(broken.c_str());
  std::remove(path.c_str());
}

TEST(ArtifactFormat, ChecksumSeesEveryByte) {
  std::vector<uint8_t> data(1000, 0);
  uint64_t base = checksum64(data.data(), data.size());
  for (size_t i = 0; i < data.size(); i += 37) {
    data[i] = 1;
    EXPECT_NE(checksum64(data.data(), data.size()), base) << i;
    data[i] = 0;
  }
  EXPECT_NE(checksum64(data.data(), 999), base);
}

TEST(ArtifactFormat, StreamedChecksumEqualsOneShot) {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 131 + 7);
  uint64_t expected = checksum64(data.data(), data.size());
  for (size_t piece : {1u, 3u, 31u, 32u, 33u, 100u, 999u}) {
    Checksum64 streamed(data.size());
    for (size_t at = 0; at < data.size(); at += piece)
      streamed.update(data.data() + at, std::min(piece, data.size() - at));
    EXPECT_EQ(streamed.finish(), expected) << "pieces of " << piece;
  }
}

TEST(ArtifactFormat, ProducedSectionOfTheWrongSizeFailsTheWrite) {
  ArtifactBuilder builder;
  builder.addSection(SectionKind::Weights, 100, [](const SectionSink &sink) {
    uint8_t bytes[40] = {};
    sink(bytes, sizeof bytes);
    return Status::ok();
  });
  std::string path = testing::TempDir() + "/quill-short-section.qm";
  Status s = builder.write(path);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("produced 40 bytes, expected 100"), std::string::npos);
}

TEST(ArtifactFormat, BatchScheduleAndDispatchFlagsRoundTrip) {
  ModelConfig c = tinyConfig();
  BatchSchedule batch;
  batch.schedule = tinySchedule();
  // 8 units, 4 per live row (a row's kv heads, say).
  batch.schedule.dispatches[1].liveRowUnits = 4;
  batch.schedule.dispatches[1].writes = 0b10;
  batch.layout.rows = 4;
  batch.layout.blockSize = 2;
  batch.layout.tableWidth = 3;
  batch.layout.maxBlocks = 100;
  batch.layout.sections = 2;
  batch.layout.blockBytes = 64;
  batch.layout.tokens = {MemorySpace::Input, 0, 16};
  batch.layout.positions = {MemorySpace::Input, 64, 16};
  batch.layout.tables = {MemorySpace::Input, 128, 48};
  std::vector<uint8_t> bytes = encodeBatchSchedule(batch);
  auto decoded = decodeBatchSchedule(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.isOk()) << decoded.message();
  EXPECT_EQ(decoded->layout.rows, 4);
  EXPECT_EQ(decoded->layout.tableWidth, 3);
  EXPECT_EQ(decoded->layout.blockBytes, 64u);
  EXPECT_EQ(decoded->layout.tables.offset, 128u);
  ASSERT_EQ(decoded->schedule.dispatches.size(), 2u);
  EXPECT_EQ(decoded->schedule.dispatches[0].liveRowUnits, 0);
  EXPECT_EQ(decoded->schedule.dispatches[0].writes, ~uint64_t(0));
  EXPECT_EQ(decoded->schedule.dispatches[1].liveRowUnits, 4);
  EXPECT_EQ(decoded->schedule.dispatches[1].writes, 0b10u);
  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decodeBatchSchedule(bytes.data(), n).isOk()) << n << " bytes";
  // More units per row than the work has are refused.
  batch.schedule.dispatches[1].liveRowUnits = 9;
  std::vector<uint8_t> uneven = encodeBatchSchedule(batch);
  EXPECT_FALSE(decodeBatchSchedule(uneven.data(), uneven.size()).isOk());
  // A dispatch over live rows needs a batch layout.
  EXPECT_FALSE(validateSchedule(decoded->schedule, c).isOk());
}

TEST(WeightTable, RoundTripsAndSummarizesByEncoding) {
  // A Q8_0 matrix of 64 weights (2 blocks of 34 bytes), an f32 norm of 8,
  // a Q6_K pack of 16 rows of 256 (one super-block of 210 bytes each) in
  // row groups of 16.
  std::vector<WeightEntry> table = {{"layers.0.wq", WeightEncoding::Q8_0, 0, 68, 64},
                                    {"layers.0.attention_norm", WeightEncoding::F32, 68, 32, 8},
                                    {"a+b", WeightEncoding::Q6_K, 128, 3360, 4096, 16}};
  std::vector<uint8_t> bytes = encodeWeightTable(table);
  auto decoded = decodeWeightTable(bytes.data(), bytes.size(), 3488);
  ASSERT_TRUE(decoded.isOk()) << decoded.message();
  ASSERT_EQ(decoded->size(), 3u);
  EXPECT_EQ((*decoded)[2].name, "a+b");
  EXPECT_EQ((*decoded)[2].encoding, WeightEncoding::Q6_K);
  EXPECT_EQ((*decoded)[2].offset, 128u);
  EXPECT_EQ((*decoded)[2].rowGroups, 16u);
  EXPECT_EQ((*decoded)[0].rowGroups, 0u);
  EXPECT_EQ(dominantEncoding(*decoded), "q6_k");
  auto perType = bytesByEncoding(*decoded);
  EXPECT_EQ(perType[uint32_t(WeightEncoding::Q8_0)], 68u);
  EXPECT_EQ(perType[uint32_t(WeightEncoding::F32)], 32u);
  EXPECT_EQ(describeWeights(*decoded),
            "3.5 kB: q6_k 3.4 kB (1, 1 in row groups of 16), q8_0 68 B (1), f32 32 B (1)");
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decodeWeightTable(bytes.data(), n, 3488).isOk()) << n << " bytes";
}

TEST(WeightTable, RefusesWhatTheEncodingCannotHoldOrTheSectionCannotFit) {
  auto refusal = [](std::vector<WeightEntry> table, uint64_t weightBytes = 4096) {
    std::vector<uint8_t> bytes = encodeWeightTable(table);
    auto decoded = decodeWeightTable(bytes.data(), bytes.size(), weightBytes);
    return decoded ? std::string() : decoded.message();
  };
  EXPECT_EQ(refusal({{"w", WeightEncoding::Q4_0, 0, 18, 32}}), "");
  // 33 Q4_0 weights are no whole block; 32 take 18 bytes, not 34.
  EXPECT_NE(refusal({{"w", WeightEncoding::Q4_0, 0, 18, 33}}).find("cannot take"),
            std::string::npos);
  EXPECT_NE(refusal({{"w", WeightEncoding::Q4_0, 0, 34, 32}}).find("cannot take"),
            std::string::npos);
  // Row groups of 8 or 16 whole rows, and only of block types: 8 rows of
  // one Q4_0 block each are a group; one row is not, nor are groups of 4.
  EXPECT_EQ(refusal({{"w", WeightEncoding::Q4_0, 0, 144, 256, 8}}), "");
  EXPECT_NE(refusal({{"w", WeightEncoding::Q4_0, 0, 18, 32, 8}}).find("row groups of 8"),
            std::string::npos);
  EXPECT_NE(refusal({{"w", WeightEncoding::Q4_0, 0, 144, 256, 4}}).find("row groups of 4"),
            std::string::npos);
  EXPECT_NE(refusal({{"w", WeightEncoding::F32, 0, 128, 32, 16}}).find("row groups of 16"),
            std::string::npos);
  // Q4_K's super-block is 256 weights in 144 bytes.
  EXPECT_EQ(refusal({{"w", WeightEncoding::Q4_K, 0, 144, 256}}), "");
  EXPECT_NE(refusal({{"w", WeightEncoding::Q4_K, 0, 144, 32}}), "");
  // Past the section, overlapping, out of order.
  EXPECT_NE(refusal({{"w", WeightEncoding::F32, 4000, 400, 100}}).find("outside"),
            std::string::npos);
  EXPECT_NE(refusal({{"a", WeightEncoding::F32, 0, 8, 2}, {"b", WeightEncoding::F32, 4, 8, 2}}),
            "");
  EXPECT_NE(refusal({{"a", WeightEncoding::F32, 64, 8, 2}, {"b", WeightEncoding::F32, 0, 8, 2}}),
            "");
  // An offset near 2^64 does not wrap around the bounds check.
  EXPECT_NE(refusal({{"w", WeightEncoding::F32, ~uint64_t(0) - 3, 8, 2}}), "");
  EXPECT_NE(refusal({{"", WeightEncoding::F32, 0, 8, 2}}).find("no printable name"),
            std::string::npos);
  EXPECT_NE(refusal({{"w\x1b[2J", WeightEncoding::F32, 0, 8, 2}}).find("no printable name"),
            std::string::npos);
  EXPECT_NE(refusal({{"w", static_cast<WeightEncoding>(7), 0, 8, 2}}).find("unknown encoding 7"),
            std::string::npos);
  // A count claiming more entries than the bytes could hold.
  std::vector<uint8_t> huge = {0xff, 0xff, 0x0f, 0x00};
  EXPECT_FALSE(decodeWeightTable(huge.data(), huge.size(), 4096).isOk());
  std::vector<uint8_t> trailing = encodeWeightTable({{"w", WeightEncoding::F32, 0, 8, 2}});
  trailing.push_back(0);
  EXPECT_FALSE(decodeWeightTable(trailing.data(), trailing.size(), 4096).isOk());
}

/// A decode attention kernel and a batch step's logits, as the compiler
/// counts them.
std::vector<KernelCost> sampleKernelCosts() {
  KernelCost attention;
  attention.kernel = "step_attention_0";
  attention.op = "attention";
  attention.flopsPerPosition = 256;
  attention.rowBytes = 512;
  attention.kvBytesPerPosition = 512;
  KernelCost logits;
  logits.step = CostStep::Batch;
  logits.scaling = RowScaling::LogitRows;
  logits.int8Products = true;
  logits.kernel = "batch_logits_9";
  logits.op = "logits";
  logits.weightType = "q8_0";
  logits.flops = 16 * 2.0 * 512 * 64;
  logits.weightBytes = 512 * 64 / 32 * 34;
  logits.rowBytes = 16 * (64 + 512) * 4;
  return {attention, logits};
}

TEST(KernelCosts, RoundTripAndALaunchsWorkFollowsItsPositionsAndRows) {
  std::vector<KernelCost> costs = sampleKernelCosts();
  std::vector<uint8_t> bytes = encodeKernelCosts(costs);
  auto decoded = decodeKernelCosts(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.isOk()) << decoded.message();
  ASSERT_EQ(decoded->size(), 2u);
  const KernelCost *logits = findKernelCost(*decoded, CostStep::Batch, "batch_logits_9");
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->op, "logits");
  EXPECT_EQ(logits->weightType, "q8_0");
  EXPECT_TRUE(logits->int8Products);
  EXPECT_EQ(logits->scaling, RowScaling::LogitRows);
  EXPECT_EQ(findKernelCost(*decoded, CostStep::Step, "batch_logits_9"), nullptr);

  // Attention at 10 cached positions: 256 FLOPs and 512 KV bytes each.
  const KernelCost *attention = findKernelCost(*decoded, CostStep::Step, "step_attention_0");
  ASSERT_NE(attention, nullptr);
  LaunchWork work = launchWork(*attention, 10, 10);
  EXPECT_DOUBLE_EQ(work.flops, 2560);
  EXPECT_DOUBLE_EQ(work.bytes, 512 + 5120);
  // The logits of 4 of 16 rows: a quarter of the products and row bytes,
  // all the weights.
  work = launchWork(*logits, 7, 7, /*liveRows=*/9, /*logitRows=*/4, /*rows=*/16);
  EXPECT_DOUBLE_EQ(work.flops, 4 * 2.0 * 512 * 64);
  EXPECT_DOUBLE_EQ(work.bytes, 512 * 64 / 32 * 34 + 4 * (64 + 512) * 4);
}

TEST(KernelCosts, RefusesEveryTruncationAndWhatNoKernelCanHave) {
  std::vector<uint8_t> bytes = encodeKernelCosts(sampleKernelCosts());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decodeKernelCosts(bytes.data(), n).isOk()) << n << " bytes";
  auto refused = [](std::vector<KernelCost> costs, const std::string &phrase) {
    std::vector<uint8_t> b = encodeKernelCosts(costs);
    auto decoded = decodeKernelCosts(b.data(), b.size());
    ASSERT_FALSE(decoded.isOk());
    EXPECT_NE(decoded.message().find(phrase), std::string::npos) << decoded.message();
  };
  std::vector<KernelCost> costs = sampleKernelCosts();
  costs[0].flops = -1;
  refused(costs, "negative, non-finite");
  costs = sampleKernelCosts();
  costs[1].rowBytes = std::nan("");
  refused(costs, "negative, non-finite");
  // Large enough that a run's sums would overflow to infinity.
  costs = sampleKernelCosts();
  costs[0].flopsPerPosition = 1e300;
  refused(costs, "impossibly large");
  costs = sampleKernelCosts();
  costs[0].kernel = "not a symbol";
  refused(costs, "does not name a kernel");
  costs = sampleKernelCosts();
  costs[1].step = static_cast<CostStep>(3);
  refused(costs, "unknown step");
  costs = sampleKernelCosts();
  costs[1].scaling = static_cast<RowScaling>(7);
  refused(costs, "unknown step, row scaling");
  // Two entries for one kernel of one step (the same name in another step
  // is another kernel's cost).
  costs = sampleKernelCosts();
  costs.push_back(costs[1]);
  costs.back().flops = 1;
  refused(costs, "two entries for one step");
  costs = sampleKernelCosts();
  costs.push_back(costs[1]);
  costs.back().step = CostStep::Prefill;
  std::vector<uint8_t> otherStep = encodeKernelCosts(costs);
  EXPECT_TRUE(decodeKernelCosts(otherStep.data(), otherStep.size()).isOk());
  // A count no section of this size can hold.
  std::vector<uint8_t> huge = {0xff, 0xff, 0xff, 0x7f};
  EXPECT_FALSE(decodeKernelCosts(huge.data(), huge.size()).isOk());
  std::vector<uint8_t> trailing = encodeKernelCosts(sampleKernelCosts());
  trailing.push_back(0);
  EXPECT_FALSE(decodeKernelCosts(trailing.data(), trailing.size()).isOk());
}

} // namespace
} // namespace quill
