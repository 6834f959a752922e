// quill-quantize-weights: each weight matrix's encoding under a scheme,
// following llama.cpp's llama_tensor_get_type for the same file type.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::quill {
#define GEN_PASS_DEF_QUANTIZEWEIGHTS
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// llama.cpp's use_more_bits(i, n): the first and last eighth of the
/// layers, and every third one between.
bool usesMoreBits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

/// The layer of "layers.N.NAME" and NAME, or nullopt.
std::optional<std::pair<int64_t, StringRef>> layerOf(StringRef name) {
  if (!name.consume_front("layers."))
    return std::nullopt;
  auto [number, rest] = name.split('.');
  int64_t layer;
  if (number.getAsInteger(10, layer))
    return std::nullopt;
  return std::make_pair(layer, rest);
}

/// Where a matrix's columns are not whole blocks: llama.cpp's fallbacks.
StringRef fitColumns(StringRef encoding, int64_t columns) {
  if ((encoding == "q4_k" || encoding == "q6_k") && columns % 256 != 0)
    encoding = encoding == "q6_k" ? "q8_0" : "q4_0";
  if ((encoding == "q8_0" || encoding == "q4_0") && columns % 32 != 0)
    encoding = "f16";
  return encoding;
}

struct QuantizeWeightsPass : mlir::quill::impl::QuantizeWeightsBase<QuantizeWeightsPass> {
  using QuantizeWeightsBase::QuantizeWeightsBase;

  void runOnOperation() override {
    static const StringRef schemes[] = {"f16", "bf16", "q8_0", "q4_0", "q4_k_m"};
    if (!llvm::is_contained(schemes, StringRef(scheme))) {
      getOperation().emitError("quill-quantize-weights: unknown scheme '")
          << scheme << "' (expected f16, bf16, q8_0, q4_0 or q4_k_m)";
      return signalPassFailure();
    }
    // The classifier: `output`, or the embedding where the model shares it.
    bool hasOutput = false;
    int64_t layers = 0;
    getOperation().walk([&](WeightOp weight) {
      hasOutput |= weight.getName() == "output";
      if (auto layer = layerOf(weight.getName()))
        layers = std::max(layers, layer->first + 1);
    });
    StringRef classifier = hasOutput ? "output" : "tok_embeddings";
    getOperation().walk([&](WeightOp weight) {
      auto type = cast<RankedTensorType>(weight.getType());
      if (type.getRank() != 2)
        return;
      StringRef encoding = encodingOf(weight.getName(), classifier, layers);
      encoding = fitColumns(encoding, type.getDimSize(1));
      weight.getResult().setType(
          RankedTensorType::get(type.getShape(), weightElementType(&getContext(), encoding)));
    });
  }

  StringRef encodingOf(StringRef name, StringRef classifier, int64_t layers) const {
    if (scheme == "f16" || scheme == "bf16" || scheme == "q8_0")
      return scheme;
    if (name == classifier)
      return "q6_k";
    if (scheme == "q4_0")
      return "q4_0";
    if (auto layer = layerOf(name); layer && (layer->second == "wv" || layer->second == "w2") &&
                                    usesMoreBits(layer->first, layers))
      return "q6_k";
    return "q4_k";
  }
};

} // namespace
