// Declarations and registration of the quill dialect's passes.
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include "dialects/Quill/IR/QuillDialect.h"

namespace mlir::quill {

#define GEN_PASS_DECL
#include "dialects/Quill/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Quill/Transforms/Passes.h.inc"

} // namespace mlir::quill
