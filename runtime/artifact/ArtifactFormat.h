// The Quill artifact format, owned by the runtime: one file holding the model
// configuration, the tokenizer, the kernels' machine code, the step schedule
// and the weights, laid out so the weights can be mapped in place.
//
// Layout (all integers little-endian):
//   Header      64 bytes: magic "QUILLART", u32 version, u32 section count,
//               u64 file size, u64 section-table offset, u64 table checksum.
//   Sections    each {u32 kind, u32 reserved, u64 offset, u64 size,
//               u64 checksum}; offsets are absolute, Weights is 4096-aligned.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

constexpr char kArtifactMagic[8] = {'Q', 'U', 'I', 'L', 'L', 'A', 'R', 'T'};
/// 4: CUDA kernels read the token and position from device memory.
/// 5: the CPU kernel library states each kernel's contract (KernelContract.h).
/// 6: the config holds the Llama-family features (head width, biases, q/k
///    norms, sliding window, end tokens, BOS policy).
/// 7: the optional ChatTemplate section (older runtimes refuse its kind).
/// 8: the optional WeightTable section.
/// 9: the config holds the KV cache's element type.
/// 10: WeightTable entries say their row groups (bits 8-15 of the encoding).
/// 11: the optional KernelCosts section.
/// 12: Q6_K row groups keep their words in the order decode reads them.
constexpr uint32_t kArtifactVersion = 12;
constexpr uint64_t kWeightsAlignment = 4096; ///< A page: mmap-able in place.

enum class SectionKind : uint32_t {
  Config = 1,          ///< ModelConfig, see encodeConfig.
  Tokenizer = 2,       ///< llama2.c tokenizer.bin bytes.
  KernelLibrary = 3,   ///< An ELF shared object exporting the kernels.
  Schedule = 4,        ///< The step's dispatches and memory plan.
  Target = 5,          ///< Text: the CPU and features the kernels were built for.
  Weights = 6,         ///< The weight blob the schedule's offsets point into.
  PrefillSchedule = 7, ///< Optional: the step over a chunk of tokens.
  BatchSchedule = 8,   ///< Optional: the batch step over the paged KV cache.
  GpuKernels = 9,      ///< PTX text of the kernels, instead of KernelLibrary (CUDA).
  /// Optional: the model's Jinja chat template, UTF-8 text of at most
  /// kMaxChatTemplateBytes (ReadFile.h), no NUL.
  ChatTemplate = 10,
  /// Optional: each stored weight's encoding and range (WeightTable.h).
  WeightTable = 11,
  /// Optional: each kernel's FLOPs and bytes per launch (KernelCosts.h).
  KernelCosts = 12,
};

struct ArtifactHeader {
  char magic[8];
  uint32_t version;
  uint32_t sectionCount;
  uint64_t fileSize;
  uint64_t sectionTableOffset;
  uint64_t sectionTableChecksum;
  uint8_t reserved[24];
};
static_assert(sizeof(ArtifactHeader) == 64);

struct SectionEntry {
  uint32_t kind;
  uint32_t reserved;
  uint64_t offset;
  uint64_t size;
  uint64_t checksum;
};
static_assert(sizeof(SectionEntry) == 32);

/// The runtime memory spaces a kernel argument can point into.
/// KVPool: the paged KV cache; a binding's offset is a section (2 * layer
/// for keys, + 1 for values), its bytes one block of that section.
enum class MemorySpace : uint32_t { Weights = 0, KVCache = 1, Scratch = 2, Input = 3, KVPool = 4 };

/// A byte range of one memory space.
struct Binding {
  MemorySpace space = MemorySpace::Scratch;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// One kernel launch: kernel(bindings, token, pos, begin, end) over disjoint
/// ranges covering [0, work), split in multiples of grain.
/// The most bindings a dispatch may have (the writes mask has 64 bits).
constexpr size_t kMaxBindingsPerDispatch = 64;

struct Dispatch {
  uint32_t kernel = 0; ///< Index into Schedule::kernels.
  int64_t work = 1;
  int64_t grain = 1;
  std::vector<Binding> bindings;
  /// k > 0: the units are k per token row of the batch step, in row
  /// order, and only [0, min(work, k * live rows)) runs (the kernel's
  /// first scalar is the live row count); 0: all of [0, work) runs.
  int64_t liveRowUnits = 0;
  /// Bit i set: the kernel writes bindings[i] (else it only reads it).
  uint64_t writes = ~uint64_t(0);
};

/// The compiled step: what to launch, in order, and how much memory it needs.
struct Schedule {
  uint64_t scratchBytes = 0;
  uint64_t kvBytes = 0;
  uint64_t weightBytes = 0;
  uint64_t inputBytes = 0; ///< Token ids the runtime writes (prefill).
  int32_t tokens = 1;      ///< Tokens one run of the schedule processes.
  Binding logits;
  std::vector<std::string> kernels; ///< Exported symbol names.
  std::vector<Dispatch> dispatches;
};

/// What the runtime needs to drive the batch step: its rows, the paged
/// cache's geometry, and where each per-row input goes in the input buffer.
struct BatchLayout {
  int32_t rows = 0;        ///< Token rows per step (live ones first).
  int32_t blockSize = 0;   ///< Positions per KV block.
  int32_t tableWidth = 0;  ///< Block-table entries per row: context / blockSize, rounded up.
  int32_t maxBlocks = 0;   ///< The most blocks the kernels can address.
  int32_t sections = 0;    ///< 2 * layers.
  uint64_t blockBytes = 0; ///< One block of one section: blockSize * ModelConfig::kvRowBytes().
  Binding tokens, positions, tables; ///< Input buffer ranges (int32).
};

/// The batch step: its layout and schedule.
struct BatchSchedule {
  BatchLayout layout;
  Schedule schedule;
};

/// Letters, digits, '_', '.' and '$' only: a kernel's exported name.
bool isSymbolName(const std::string &name);

/// What a ChatTemplate section may hold: UTF-8 text without NUL, at most
/// kMaxChatTemplateBytes. Checked where a template is read (a model file,
/// --chat-template) and when an artifact is loaded.
Status checkChatTemplateText(std::string_view text);

std::vector<uint8_t> encodeConfig(const ModelConfig &config);
ErrorOr<ModelConfig> decodeConfig(const uint8_t *data, size_t size);
std::vector<uint8_t> encodeSchedule(const Schedule &schedule);
ErrorOr<Schedule> decodeSchedule(const uint8_t *data, size_t size);

std::vector<uint8_t> encodeBatchSchedule(const BatchSchedule &batch);
ErrorOr<BatchSchedule> decodeBatchSchedule(const uint8_t *data, size_t size);

/// Checks that every dispatch names a kernel and binds ranges inside the
/// memory plan, and that the logits are vocabSize floats of scratch (one
/// row per batch row with a `batch` layout, which also admits the paged
/// cache's sections).
Status validateSchedule(const Schedule &schedule, const ModelConfig &config,
                        const BatchLayout *batch = nullptr);

/// Appends bytes to the section being written.
using SectionSink = std::function<void(const void *data, size_t size)>;
/// Produces a section's bytes in order into the sink, while the file is
/// written (so gigabytes of weights never sit in memory twice).
using SectionProducer = std::function<Status(const SectionSink &sink)>;

/// Assembles an artifact file in memory order and writes it.
class ArtifactBuilder {
public:
  void addSection(SectionKind kind, std::vector<uint8_t> bytes);
  /// A section of exactly `size` bytes that `produce` writes when the file
  /// is written.
  void addSection(SectionKind kind, uint64_t size, SectionProducer produce);
  /// Writes header, table and sections; the Weights section is page-aligned.
  Status write(const std::string &path) const;

private:
  struct Section {
    SectionKind kind;
    uint64_t size;
    SectionProducer produce;
  };
  std::vector<Section> sections_;
};

} // namespace quill
