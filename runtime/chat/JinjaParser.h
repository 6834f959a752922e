// Builds the syntax tree of a template from its tokens, with jinja2's
// grammar and operator precedence (jinja2/parser.py).
#pragma once

#include "runtime/chat/JinjaAst.h"
#include "runtime/chat/JinjaLexer.h"
#include "runtime/support/Error.h"

#include <string_view>

namespace quill::jinja {

/// The template's statements; or "line L, column C: what is wrong".
ErrorOr<Body> parseTemplate(std::string_view source, const LexerOptions &options = {});

} // namespace quill::jinja
