// quill-fuse-rope-kv: the rotary embedding of Q and K and the cache writes of
// K and V become the epilogue of the fused QKV projection.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_FUSEROPEKV
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

template <typename OpTy> OpTy soleUser(Value value) {
  return value.hasOneUse() ? dyn_cast<OpTy>(*value.getUsers().begin()) : OpTy();
}

/// The ops the fusion replaces, found from the projection.
struct Match {
  SliceOp q, k, v;
  RoPEOp qRope, kRope;
  KVWriteOp kWrite, vWrite;
};

std::optional<Match> match(LinearOp linear) {
  if (linear.getResidual() || linear.getSwiglu() || linear.isTiled() ||
      linear.getType().getRank() != 1)
    return std::nullopt;
  Match m;
  for (Operation *user : linear->getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice)
      return std::nullopt;
    int64_t offset = slice.getOffsetAttr().getInt();
    (offset == 0 ? m.q : !m.k ? m.k : m.v) = slice;
  }
  if (!m.q || !m.k || !m.v || std::distance(linear->user_begin(), linear->user_end()) != 3)
    return std::nullopt;
  if (m.k.getOffsetAttr().getInt() > m.v.getOffsetAttr().getInt())
    std::swap(m.k, m.v);
  int64_t rows = linear.getType().getDimSize(0);
  auto rowsOf = [](SliceOp slice) { return cast<RankedTensorType>(slice.getType()).getDimSize(0); };
  int64_t qRows = rowsOf(m.q), kvRows = rowsOf(m.k);
  if (m.k.getOffsetAttr().getInt() != qRows || m.v.getOffsetAttr().getInt() != qRows + kvRows ||
      rowsOf(m.v) != kvRows || qRows + 2 * kvRows != rows)
    return std::nullopt;
  m.qRope = soleUser<RoPEOp>(m.q);
  m.kRope = soleUser<RoPEOp>(m.k);
  m.vWrite = soleUser<KVWriteOp>(m.v);
  if (!m.qRope || !m.kRope || !m.vWrite)
    return std::nullopt;
  m.kWrite = soleUser<KVWriteOp>(m.kRope);
  if (!m.kWrite || m.kWrite.getRow() != m.kRope.getResult() || m.vWrite.getRow() != m.v.getResult())
    return std::nullopt;
  Value pos = m.qRope.getPos();
  if (m.kRope.getPos() != pos || m.kWrite.getPos() != pos || m.vWrite.getPos() != pos ||
      m.qRope.getHeadDim() != m.kRope.getHeadDim() || m.qRope.getTheta() != m.kRope.getTheta() ||
      m.qRope.getFreqs() != m.kRope.getFreqs() ||
      m.qRope.getAttentionFactor() != m.kRope.getAttentionFactor())
    return std::nullopt;
  return m;
}

struct FuseRopeKVPass : mlir::quill::impl::FuseRopeKVBase<FuseRopeKVPass> {
  void runOnOperation() override {
    SmallVector<LinearOp> linears;
    getOperation().walk([&](LinearOp linear) { linears.push_back(linear); });
    for (LinearOp linear : linears) {
      std::optional<Match> m = match(linear);
      if (!m)
        continue;
      // The fused op needs both caches: it goes after the later cache write,
      // and every use of the rotated Q must come after it.
      Operation *at = m->kWrite->isBeforeInBlock(m->vWrite) ? m->vWrite : m->kWrite;
      if (llvm::any_of(m->qRope->getUsers(),
                       [&](Operation *user) { return user->isBeforeInBlock(at); }))
        continue;
      OpBuilder b(at);
      Location loc = linear.getLoc();
      auto fused = ProjectQKVOp::create(
          b, loc, linear.getType(), m->kWrite.getType(), m->vWrite.getType(), linear.getInput(),
          linear.getWeight(), m->kWrite.getCache(), m->vWrite.getCache(), m->qRope.getPos(),
          linear.getBias(), m->qRope.getFreqs(), ValueRange{}, m->qRope.getHeadDimAttr(),
          m->qRope.getThetaAttr(), linear.getNormEpsAttr(), m->qRope.getAttentionFactorAttr(),
          /*q8Input=*/UnitAttr(), /*bf16Input=*/UnitAttr());
      Value q = SliceOp::create(b, loc, m->qRope.getType(), fused.getResult(), int64_t(0));
      m->qRope.replaceAllUsesWith(q);
      m->kWrite.replaceAllUsesWith(fused.getNewKeys());
      m->vWrite.replaceAllUsesWith(fused.getNewValues());
      for (Operation *op : {m->kWrite.getOperation(), m->vWrite.getOperation(),
                            m->qRope.getOperation(), m->kRope.getOperation(), m->q.getOperation(),
                            m->k.getOperation(), m->v.getOperation(), linear.getOperation()})
        op->erase();
    }
  }
};

} // namespace
