// The int8 products' integer sums in the CPU's two forms (Int8DotForm).
//
// With VNNI, a word is one vpdpbusd: four products of unsigned weight
// bytes and signed input bytes added to each i32 lane, exactly.
//
// AVX2 has no such instruction. vpmaddubsw multiplies the same bytes and
// adds pairs into i16 lanes, saturating; vpmaddwd against ones then adds
// pairs of those into i32. Both are exact while no i16 sum passes 32767:
// - nibbles (Q4_0, Q4_K) times inputs within +-127 make pairs of at most
//   2 * 15 * 127 = 3810, so 8 words (30480) add in i16 before one
//   vpmaddwd widens them;
// - Q6_K's six bits (q + 32, below 64) make pairs of 16002: 2 words;
// - Q8_0's bytes as stored (q + 128, up to 255) would saturate, so the
//   signed q multiplies instead: vpmaddubsw(|q|, sign(q) * x) is q * x
//   with |q| <= 128, pairs of at most 32512 (and its offset is 0).
// The inputs are Q8_0-rounded activations, whose magnitude is at most 127
// (ActivationQuantization.h), so the sums are those vpdpbusd gives.
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {

/// How many words' vpmaddubsw pairs add in i16 without overflow.
int64_t wordsPerWidening(Type element) {
  if (isa<Q4_0Type, Q4_KType>(element))
    return 8;
  return isa<Q6_KType>(element) ? 2 : 1;
}

Value splatConstant(OpBuilder &b, Location loc, VectorType type, int64_t v) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          type, b.getIntegerAttr(type.getElementType(),
                                 APInt(type.getElementTypeBitWidth(), v, /*isSigned=*/true))));
}

Value callIntrinsic(OpBuilder &b, Location loc, Type result, llvm::StringRef name,
                    ValueRange operands) {
  return LLVM::CallIntrinsicOp::create(b, loc, result, b.getStringAttr(name), operands)
      .getResult(0);
}

} // namespace

int64_t int8WeightOffset(Int8DotForm form, Type element) {
  if (isa<Q8_0Type>(element))
    return form == Int8DotForm::Vnni ? 128 : 0;
  if (isa<Q4_0Type>(element))
    return 8;
  return isa<Q6_KType>(element) ? 32 : 0;
}

Int8Sums::Int8Sums(Int8DotForm form, Type element, Value start)
    : form(form), element(element), acc(start) {}

void Int8Sums::add(OpBuilder &b, Location loc, Value weights, Value input) {
  const int64_t lanes = cast<VectorType>(acc.getType()).getDimSize(0);
  auto bytes = VectorType::get({4 * lanes}, b.getI8Type());
  Value w = vector::BitCastOp::create(b, loc, bytes, weights);
  Value x = vector::BitCastOp::create(b, loc, bytes, input);
  if (form == Int8DotForm::Vnni) {
    acc =
        callIntrinsic(b, loc, acc.getType(),
                      lanes == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256",
                      ValueRange{acc, w, x});
    return;
  }
  assert(lanes == 8 && "AVX2's int8 products are 256 bits wide");
  if (isa<Q8_0Type>(element)) {
    // q = stored ^ 0x80; |q| times x with q's sign (0 where q is 0).
    Value q = arith::XOrIOp::create(b, loc, w, splatConstant(b, loc, bytes, -128));
    x = callIntrinsic(b, loc, bytes, "llvm.x86.avx2.psign.b", ValueRange{x, q});
    w = math::AbsIOp::create(b, loc, q);
  }
  Value pairs = callIntrinsic(b, loc, VectorType::get({2 * lanes}, b.getI16Type()),
                              "llvm.x86.avx2.pmadd.ub.sw", ValueRange{w, x});
  pending = pending ? arith::AddIOp::create(b, loc, pending, pairs).getResult() : pairs;
  if (++pendingWords == wordsPerWidening(element))
    widenPending(b, loc);
}

void Int8Sums::widenPending(OpBuilder &b, Location loc) {
  if (!pending)
    return;
  auto halves = cast<VectorType>(pending.getType());
  Value widened = callIntrinsic(b, loc, acc.getType(), "llvm.x86.avx2.pmadd.wd",
                                ValueRange{pending, splatConstant(b, loc, halves, 1)});
  acc = arith::AddIOp::create(b, loc, acc, widened);
  pending = Value();
  pendingWords = 0;
}

Value Int8Sums::sums(OpBuilder &b, Location loc) {
  widenPending(b, loc);
  return acc;
}

} // namespace mlir::quill
