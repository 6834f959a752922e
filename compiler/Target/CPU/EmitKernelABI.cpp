// quill-emit-kernel-abi: one C calling convention for every dispatched kernel,
// `void K(void *const *bindings, i64 token, i64 pos, i64 begin, i64 end)`.
#include "compiler/Target/CPU/Passes.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::quill {
#define GEN_PASS_DEF_EMITKERNELABI
#include "compiler/Target/CPU/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

constexpr unsigned kScalarParams = 4; // token, pos, begin, end

struct EmitKernelABIPass : mlir::quill::impl::EmitKernelABIBase<EmitKernelABIPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    llvm::SetVector<StringRef> kernels;
    module.walk([&](DispatchOp dispatch) { kernels.insert(dispatch.getKernel()); });

    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto abiType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType, i64, i64, i64, i64});
    for (StringRef name : kernels) {
      auto body = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!body) {
        module.emitError("quill-emit-kernel-abi: kernel @")
            << name
            << " is not an llvm.func (run convert-func-to-llvm with "
               "use-bare-ptr-memref-call-conv first)";
        return signalPassFailure();
      }
      if (body.isExternal()) {
        body.emitError("quill-emit-kernel-abi: kernel @")
            << name << " is only declared; a dispatched kernel needs a body";
        return signalPassFailure();
      }
      std::string bodyName = (name + "_body").str();
      if (module.lookupSymbol(bodyName)) {
        body.emitError("quill-emit-kernel-abi: @") << bodyName << " already exists";
        return signalPassFailure();
      }
      LLVM::LLVMFunctionType type = body.getFunctionType();
      unsigned numParams = type.getNumParams();
      if (numParams < kScalarParams ||
          llvm::any_of(
              type.getParams().drop_back(kScalarParams), [&](Type t) { return t != ptrType; }) ||
          llvm::any_of(
              type.getParams().take_back(kScalarParams), [&](Type t) { return t != i64; })) {
        body.emitError("quill-emit-kernel-abi: kernel @")
            << name << " must take bare pointers then 4 integers, got " << type;
        return signalPassFailure();
      }
      body.setSymName(bodyName);
      body.setLinkage(LLVM::Linkage::Internal);
      unsigned numBindings = numParams - kScalarParams;
      // Each binding is a distinct buffer; only an op's in-place cache is
      // both read and written, through one pointer.
      for (unsigned i = 0; i < numBindings; ++i)
        body.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));

      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      auto wrapper = LLVM::LLVMFuncOp::create(b, body.getLoc(), name, abiType);
      Block *entry = wrapper.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      SmallVector<Value> args;
      for (unsigned i = 0; i < numBindings; ++i) {
        Value slot = LLVM::GEPOp::create(b, body.getLoc(), ptrType, ptrType, entry->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        args.push_back(LLVM::LoadOp::create(b, body.getLoc(), ptrType, slot));
      }
      for (unsigned i = 0; i < kScalarParams; ++i)
        args.push_back(entry->getArgument(1 + i));
      LLVM::CallOp::create(b, body.getLoc(), body, args);
      LLVM::ReturnOp::create(b, body.getLoc(), ValueRange{});
    }
  }
};

} // namespace
