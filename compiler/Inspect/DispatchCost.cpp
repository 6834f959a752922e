// The FLOPs and bytes of a dispatch, from the quill ops of its kernel.
#include "compiler/Inspect/DispatchCost.h"

#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

namespace quill {

namespace {

using namespace mlir;
namespace q = mlir::quill;

/// Elements of a statically shaped tensor (dynamic dimensions count 1).
double elements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 1;
  double n = 1;
  for (int64_t d : shaped.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : double(d);
  return n;
}

/// Rows of a [T, width] matrix, 1 for a vector.
double rowsOf(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getRank() >= 2 && !type.isDynamicDim(0) ? double(type.getDimSize(0)) : 1.0;
}

/// Bytes one cached position takes in a cache ([positions, width] or a
/// block pool [blocks, block size, width]): its last dimension.
double positionBytes(Value cache) {
  auto type = cast<ShapedType>(cache.getType());
  const double width = double(type.getDimSize(type.getRank() - 1));
  // A block-quantized cache (q8_0) stores whole blocks of a position's row.
  if (auto format = q::weightFormatOf(type.getElementType()))
    return width / double(format->blockElements) * double(format->blockBytes);
  return width * type.getElementType().getIntOrFloatBitWidth() / 8.0;
}

/// Bytes of one row of a weight matrix in its encoding.
double weightRowBytes(Value weight) {
  auto type = cast<ShapedType>(weight.getType());
  auto format = q::weightFormatOf(type.getElementType());
  if (!format)
    return double(type.getDimSize(1)) * type.getElementType().getIntOrFloatBitWidth() / 8.0;
  return double(type.getDimSize(1)) / double(format->blockElements) * double(format->blockBytes);
}

/// The encoding of a weight matrix's element type.
std::string encodingOf(Value weight) {
  auto format = q::weightFormatOf(cast<ShapedType>(weight.getType()).getElementType());
  return format ? format->name.str() : std::string();
}

/// 2 FLOPs per multiply-add of `rows` inputs by a weight [N, K].
double productFlops(double rows, Value weight) {
  auto type = cast<ShapedType>(weight.getType());
  return 2.0 * rows * double(type.getDimSize(0)) * double(type.getDimSize(1));
}

/// Per cached position: a query head's score (head_dim multiply-adds) and
/// its share of the weighted sum (as many), for every row.
double attentionFlopsPerPosition(double rows, Value query) {
  return 4.0 * elements(query.getType()) / std::max(1.0, rowsOf(query)) * rows;
}

} // namespace

DispatchCost dispatchCost(Operation *dispatch, func::FuncOp kernel) {
  DispatchCost cost;
  auto add = [&](llvm::StringRef name) { cost.op += (cost.op.empty() ? "" : "+") + name.str(); };
  bool embeds = false; // The table's bytes are not all read.
  double embeddingBytes = 0;
  kernel.walk([&](Operation *op) {
    llvm::TypeSwitch<Operation *>(op)
        .Case<q::LinearOp, q::LogitsOp>([&](auto product) {
          add(isa<q::LogitsOp>(op) ? "logits" : "linear");
          if (product.getNormEps())
            add("rmsnorm");
          if (product.getSwiglu())
            add("swiglu");
          if (product.getResidual())
            add("residual");
          cost.weightType = encodingOf(product.getWeight());
          cost.flops += productFlops(rowsOf(product.getInput()), product.getWeight());
        })
        .Case([&](q::ProjectQKVOp project) {
          add("project_qkv");
          if (project.getNormEps())
            add("rmsnorm");
          cost.weightType = encodingOf(project.getWeight());
          cost.flops += productFlops(1, project.getWeight());
          // RoPE on q and k and the cache rows written.
          cost.flops += 4.0 * elements(project.getInput().getType());
          cost.kvBytesWritten += uint64_t(positionBytes(project.getKeys()) * 2);
        })
        .Case([&](q::RMSNormOp norm) {
          add("rmsnorm");
          cost.flops += 4.0 * elements(norm.getInput().getType());
        })
        .Case([&](q::RoPEOp rope) {
          add("rope");
          cost.flops += 3.0 * elements(rope.getInput().getType());
        })
        .Case([&](q::AttentionOp attention) {
          add("attention");
          double rows = rowsOf(attention.getQuery());
          cost.flopsPerPosition += attentionFlopsPerPosition(rows, attention.getQuery());
          cost.kvBytesPerPosition +=
              positionBytes(attention.getKeys()) + positionBytes(attention.getValues());
        })
        .Case([&](q::AttentionPartialOp partial) {
          add("attention_partial");
          cost.flopsPerPosition += attentionFlopsPerPosition(1, partial.getQuery());
          cost.kvBytesPerPosition +=
              positionBytes(partial.getKeys()) + positionBytes(partial.getValues());
        })
        .Case([&](q::AttentionMergeOp merge) {
          add("attention_merge");
          cost.flops += 3.0 * elements(merge.getPartials().getType());
        })
        .Case([&](q::PagedAttentionOp paged) {
          add("paged_attention");
          // Every row reads its own sequence's positions.
          double rows = rowsOf(paged.getQuery());
          cost.flopsPerPosition += attentionFlopsPerPosition(rows, paged.getQuery());
          cost.kvBytesPerPosition +=
              rows * (positionBytes(paged.getKeys()) + positionBytes(paged.getValues()));
        })
        .Case([&](q::KVWriteOp write) {
          add("kv_write");
          cost.kvBytesWritten += uint64_t(rowsOf(write.getRow()) * positionBytes(write.getCache()));
        })
        .Case([&](q::PagedKVWriteOp write) {
          add("paged_kv_write");
          cost.kvBytesWritten +=
              uint64_t(rowsOf(write.getRows()) * positionBytes(write.getCache()));
        })
        .Case<q::EmbeddingOp, q::EmbeddingsOp>([&](auto embedding) {
          add(isa<q::EmbeddingOp>(op) ? "embedding" : "embeddings");
          cost.weightType = encodingOf(embedding.getTable());
          double tokens = 1;
          if constexpr (std::is_same_v<decltype(embedding), q::EmbeddingsOp>)
            tokens = elements(embedding.getTokens().getType());
          embeds = true;
          embeddingBytes += tokens * weightRowBytes(embedding.getTable());
        })
        .Case<q::AddOp, q::SwiGLUOp>([&](Operation *elementwise) {
          cost.flops += elements(elementwise->getResult(0).getType());
        });
  });
  for (Attribute a : cast<q::DispatchOp>(dispatch).getBindings()) {
    auto binding = cast<q::BindingAttr>(a);
    if (binding.getSpace() == "weights")
      cost.weightBytes += uint64_t(binding.getBytes());
    else if (binding.getSpace() == "scratch" || binding.getSpace() == "input")
      cost.activationBytes += uint64_t(binding.getBytes());
  }
  if (embeds)
    cost.weightBytes = uint64_t(embeddingBytes);
  return cost;
}

std::string humanFigure(double value, const std::string &unit) {
  static const char *prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(value) >= 1000 && p < 5) {
    value /= 1000;
    ++p;
  }
  char text[64];
  std::snprintf(text, sizeof text, value >= 100 || p == 0 ? "%.0f %s%s" : "%.3g %s%s", value,
                prefixes[p], unit.c_str());
  return text;
}

} // namespace quill
