// Registers the quill dialect's ops, types and attributes.
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::quill;

#include "dialects/Quill/IR/QuillDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Quill/IR/QuillAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Quill/IR/QuillTypes.cpp.inc"

void QuillDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Quill/IR/QuillAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Quill/IR/QuillTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Quill/IR/QuillOps.cpp.inc"
      >();
}
