// The quill dialect: declarations of the dialect, its attributes and its ops.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Quill/IR/QuillDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Quill/IR/QuillAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Quill/IR/QuillTypes.h.inc"

#include "dialects/Quill/IR/QuillInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/Quill/IR/QuillOps.h.inc"
