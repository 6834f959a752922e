// quill-opt: mlir-opt with the quill dialect, every quill pass and pipeline,
// and the upstream dialects and passes, for replaying any stage by hand.
#include "compiler/Pipeline/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  quill::registerDialects(registry);
  quill::registerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Quill optimizer driver\n", registry));
}
