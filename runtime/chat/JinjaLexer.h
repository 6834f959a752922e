// Splits a Jinja template into tokens as jinja2's lexer does: template data,
// `{{ }}` and `{% %}` delimiters with the tokens inside them, `{# #}` comments
// dropped, `{% raw %}` kept verbatim, whitespace control (`-` strips, `+`
// keeps) and HF's trim_blocks / lstrip_blocks.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace quill::jinja {

struct Token {
  enum class Kind {
    Data,
    VariableBegin,
    VariableEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Operator,
    End
  };
  Kind kind = Kind::End;
  std::string text; ///< Data, name, operator, or the decoded string literal.
  int64_t intValue = 0;
  double floatValue = 0;
  int line = 1;
  int column = 1; ///< 1-based, in bytes.
};

struct LexerOptions {
  bool trimBlocks = true;           ///< Drop the first newline after a block tag.
  bool lstripBlocks = true;         ///< Drop blanks before a block tag on its own line.
  bool keepTrailingNewline = false; ///< jinja2's default drops one.
};

/// The tokens of `source`, ending with an End token; or "line L, column C:
/// what is wrong".
ErrorOr<std::vector<Token>> tokenize(std::string_view source, const LexerOptions &options = {});

} // namespace quill::jinja
