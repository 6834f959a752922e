// quill-wrap-gpu-kernels: the kernels move into a gpu.module, each behind a
// gpu.func that runs one unit of work per GPU thread, or per warp for
// kernels marked quill.warp_lanes (their dispatches' work then counts
// threads: units times lanes).
#include "compiler/Target/CUDA/Passes.h"
#include "dialects/Quill/IR/QuillMarkers.h"

#include "mlir/Interfaces/DataLayoutInterfaces.h"

namespace mlir::quill {
#define GEN_PASS_DEF_WRAPGPUKERNELS
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {
/// CUDA's limit on a thread's local memory (compute capability 2.0 and up).
constexpr int64_t kMaxLocalBytes = 512 * 1024;

/// Bytes of stack buffers in `kernel`, or -1 after reporting one the GPU
/// cannot give a thread.
int64_t localBytes(func::FuncOp kernel) {
  int64_t bytes = 0;
  DataLayout layout = DataLayout::closest(kernel);
  WalkResult walk = kernel.walk([&](memref::AllocaOp alloca) {
    MemRefType type = alloca.getType();
    if (!type.hasStaticShape()) {
      alloca.emitError("a stack buffer of dynamic size in kernel '")
          << kernel.getName() << "' cannot be a GPU thread's local memory";
      return WalkResult::interrupt();
    }
    bytes += type.getNumElements() * int64_t(layout.getTypeSize(type.getElementType()));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return -1;
  if (bytes > kMaxLocalBytes) {
    kernel.emitError("kernel '") << kernel.getName() << "' keeps " << bytes / 1024
                                 << " KiB of temporaries per GPU thread; CUDA allows "
                                 << kMaxLocalBytes / 1024 << " KiB";
    return -1;
  }
  return bytes;
}

/// Multiplies the work of every dispatch of `kernel` by `lanes`; false
/// after reporting a batch-step dispatch, whose work the runtime caps by
/// live rows (in units).
bool scaleDispatches(ModuleOp module, StringRef kernel, int64_t lanes) {
  bool ok = true;
  module.walk([&](quill::DispatchOp dispatch) {
    if (dispatch.getKernel() != kernel)
      return;
    if (dispatch.getLiveRows()) {
      dispatch.emitError("a warp-per-unit kernel cannot be bounded by live rows");
      ok = false;
      return;
    }
    dispatch.setWork(dispatch.getWork() * lanes);
    dispatch.setGrain(dispatch.getGrain() * lanes);
  });
  return ok;
}

struct WrapGpuKernelsPass : mlir::quill::impl::WrapGpuKernelsBase<WrapGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<func::FuncOp> kernels;
    for (auto function : module.getOps<func::FuncOp>())
      if (isKernel(function))
        kernels.push_back(function);
    if (kernels.empty())
      return;
    for (func::FuncOp kernel : kernels)
      if (localBytes(kernel) < 0)
        return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "kernels");
    for (func::FuncOp kernel : kernels) {
      std::string name = kernel.getName().str();
      Location loc = kernel.getLoc();
      // The unit of work: the kernel itself, private to the GPU module.
      kernel->moveBefore(gpuModule.getBody(), gpuModule.getBody()->end());
      kernel.setName(name + "_unit");
      kernel.setPrivate();
      clearKernel(kernel);

      // Lanes per unit: 1, or a warp whose lanes share the unit's reductions.
      int64_t lanes = warpLanes(kernel).value_or(1);
      clearWarpLanes(kernel);
      if (lanes != 1 && !scaleDispatches(module, name, lanes))
        return signalPassFailure();

      // K(memrefs..., step, work): thread i runs unit i / lanes. The token
      // and position come from device memory (step = [token, pos] as i64),
      // so a step's launches never change: the runtime captures them once
      // in a CUDA graph and only rewrites those 16 bytes per step.
      FunctionType type = kernel.getFunctionType();
      unsigned memrefs = type.getNumInputs() - 4;
      SmallVector<Type> inputs(type.getInputs().take_front(memrefs));
      Type index = IndexType::get(ctx);
      auto stepType = MemRefType::get({2}, IntegerType::get(ctx, 64));
      inputs.append({stepType, index});
      b.setInsertionPointToEnd(gpuModule.getBody());
      auto wrapper = gpu::GPUFuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
      wrapper->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
      Block &entry = wrapper.getBody().front();
      OpBuilder wb = OpBuilder::atBlockBegin(&entry);
      Value stepArgs = entry.getArgument(memrefs);
      Value work = entry.getArgument(memrefs + 1);
      Value thread = gpu::GlobalIdOp::create(wb, loc, gpu::Dimension::x);
      // Work is a multiple of the lanes: a warp is wholly live or idle, so
      // its shuffles see every lane.
      Value live = arith::CmpIOp::create(wb, loc, arith::CmpIPredicate::ult, thread, work);
      auto ifOp = scf::IfOp::create(wb, loc, live, /*withElseRegion=*/false);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      auto stepArg = [&](int64_t i) -> Value {
        Value at = arith::ConstantIndexOp::create(tb, loc, i);
        Value raw = memref::LoadOp::create(tb, loc, stepArgs, ValueRange{at});
        return arith::IndexCastOp::create(tb, loc, index, raw);
      };
      Value token = stepArg(0), pos = stepArg(1);
      Value unit = lanes == 1 ? thread
                              : arith::DivUIOp::create(
                                    tb, loc, thread, arith::ConstantIndexOp::create(tb, loc, lanes))
                                    .getResult();
      Value next = arith::AddIOp::create(tb, loc, unit, arith::ConstantIndexOp::create(tb, loc, 1));
      SmallVector<Value> args(entry.getArguments().take_front(memrefs));
      args.append({token, pos, unit, next});
      func::CallOp::create(tb, loc, kernel, args);
      gpu::ReturnOp::create(wb, loc);
    }
  }
};
} // namespace
