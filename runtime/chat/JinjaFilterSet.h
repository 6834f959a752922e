// Declarations shared by the filter files: the number filters live in
// JinjaNumberFilters.cpp, the rest (and the table) in JinjaFilters.cpp.
// Internal to QuillChat.
#pragma once

#include "runtime/chat/JinjaInterpreter.h"

namespace quill::jinja {

Value filterAbs(Interpreter &interp, const Value &v, CallArgs &args);
Value filterInt(Interpreter &interp, const Value &v, CallArgs &args);
Value filterFloat(Interpreter &interp, const Value &v, CallArgs &args);
Value filterRound(Interpreter &interp, const Value &v, CallArgs &args);
/// printf-style formatting: `"%s, %d" | format(a, b)` and `"%s" % x`.
Value filterFormat(Interpreter &interp, const Value &v, CallArgs &args);

} // namespace quill::jinja
