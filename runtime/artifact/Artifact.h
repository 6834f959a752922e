// A loaded artifact: the file mapped read-only, its sections checked and
// decoded. Weights are used in place from the mapping, or from a copy in
// huge pages.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/artifact/KernelCosts.h"
#include "runtime/artifact/WeightTable.h"
#include "runtime/support/LargeBuffer.h"
#include "runtime/support/MappedFile.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace quill {

/// Where a CPU artifact's weights are read from once it is loaded.
enum class WeightPages {
  /// In place, from the file's mapping: 4 KiB pages of the page cache,
  /// shared with every process that maps the same file.
  Mapped,
  /// From a private copy (a LargeBuffer: from 2 MiB on, in transparent huge
  /// pages where the kernel gives them). A decode step streams every weight
  /// once; over 2 MiB pages the hardware prefetcher is not stopped at every
  /// 4 KiB boundary and no TLB walk is needed per page. The copy is read
  /// from the page cache (pread), not through the mapping, so the process
  /// holds the weights once (the page cache keeps its clean copy until the
  /// kernel reclaims it). A CUDA artifact keeps Mapped (its weights are
  /// uploaded to the GPU).
  Copied,
};

class Artifact {
public:
  /// Maps and checks `path`: magic, version, size, section bounds, checksums
  /// (all sections, weights included, unless `verifyWeights` is false).
  static ErrorOr<Artifact> open(const std::string &path, bool verifyWeights = true,
                                WeightPages pages = WeightPages::Mapped);

  Artifact(Artifact &&other) = default;
  Artifact &operator=(Artifact &&other) = default;
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &path() const { return file_.path(); }
  const ModelConfig &config() const { return config_; }
  const Schedule &schedule() const { return schedule_; }
  /// The prefill schedule (several tokens per run), when compiled in.
  const Schedule *prefillSchedule() const { return hasPrefill_ ? &prefill_ : nullptr; }
  /// The batch step over the paged KV cache, when compiled in.
  const BatchSchedule *batchSchedule() const { return hasBatch_ ? &batch_ : nullptr; }
  const std::string &target() const { return target_; }
  /// The model's chat template (Jinja source), when compiled in.
  const std::optional<std::string> &chatTemplate() const { return chatTemplate_; }
  /// The llama2.c tokenizer bytes.
  const uint8_t *tokenizerData() const { return tokenizer_; }
  size_t tokenizerSize() const { return tokenizerSize_; }
  /// The kernels' shared object (ELF) bytes; null in a CUDA artifact.
  const uint8_t *kernelLibraryData() const { return library_; }
  size_t kernelLibrarySize() const { return librarySize_; }
  /// The kernels' PTX text in a CUDA artifact (quill-compile --target=cuda);
  /// null otherwise.
  const uint8_t *ptxData() const { return ptx_; }
  size_t ptxSize() const { return ptxSize_; }
  bool isCuda() const { return ptx_ != nullptr; }
  /// The page-aligned weight blob.
  const uint8_t *weights() const { return weights_; }
  /// Where weights() points: the file's mapping, or a copy in huge pages.
  WeightPages weightPages() const {
    return weightCopy_ && weights_ == weightCopy_.data() ? WeightPages::Copied
                                                         : WeightPages::Mapped;
  }
  /// Bytes of the weights in huge pages now (0 when mapped).
  size_t weightHugePageBytes() const {
    return std::min<size_t>(weightCopy_.hugePageBytes(), schedule_.weightBytes);
  }
  /// What the weight blob holds, tensor by tensor; empty when the artifact
  /// has no WeightTable section (one assembled by hand).
  const std::vector<WeightEntry> &weightTable() const { return weightTable_; }
  /// The compiler's FLOPs and bytes of each kernel's launches; empty when
  /// the artifact has no KernelCosts section.
  const std::vector<KernelCost> &kernelCosts() const { return kernelCosts_; }
  size_t fileSize() const { return file_.size(); }

private:
  Artifact() = default;

  /// The whole file; every pointer below points into it (weights_ into
  /// weightCopy_ when there is one), so moving the artifact keeps them valid.
  MappedFile file_;
  ModelConfig config_;
  Schedule schedule_;
  Schedule prefill_;
  bool hasPrefill_ = false;
  BatchSchedule batch_;
  bool hasBatch_ = false;
  std::string target_;
  std::optional<std::string> chatTemplate_;
  const uint8_t *tokenizer_ = nullptr;
  size_t tokenizerSize_ = 0;
  const uint8_t *library_ = nullptr;
  size_t librarySize_ = 0;
  const uint8_t *ptx_ = nullptr;
  size_t ptxSize_ = 0;
  const uint8_t *weights_ = nullptr;
  LargeBuffer weightCopy_; ///< Empty unless the weights were copied (WeightPages::Copied).
  std::vector<WeightEntry> weightTable_;
  std::vector<KernelCost> kernelCosts_;
};

/// Where the weights are read from, for --verbose: "a copy in memory, X of
/// Y MB in huge pages", or "the artifact's mapping (--mmap)".
std::string describeWeightPlacement(const Artifact &artifact);

} // namespace quill
