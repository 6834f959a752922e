// The syntax tree of a parsed template: expressions and statements, each
// with the line and column it starts at (for runtime error messages).
#pragma once

#include "runtime/chat/JinjaValue.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace quill::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    Literal, ///< literal
    Name,    ///< name
    List,    ///< args: the items
    Tuple,   ///< args: the items
    Dict,    ///< args: key, value, key, value, ...
    GetAttr, ///< args[0].name
    GetItem, ///< args[0][args[1]]
    Slice,   ///< args[0..2]: start, stop, step (each may be null)
    Unary,   ///< name: "-" "+"; args[0]
    Binary,  ///< name: "+" "-" "*" "/" "//" "%" "**"; args[0], args[1]
    Concat,  ///< args joined with `~`
    Compare, ///< args[0] ops[i] args[i+1] ...; ops: "==" "!=" "<" "<=" ">" ">=" "in" "notin"
    And,     ///< args[0] and args[1]
    Or,      ///< args[0] or args[1]
    Not,     ///< not args[0]
    Cond,    ///< args[1] if args[0] else args[2] (args[2] may be null)
    Filter,  ///< args[0] | name(args[1:], keywords)
    Test,    ///< args[0] is [not] name(args[1:], keywords)
    Call,    ///< args[0](args[1:], keywords)
  };
  Kind kind;
  int line = 0, column = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  bool negated = false; ///< Test: `is not`.
};

struct Stmt {
  enum class Kind {
    Text,     ///< text
    Output,   ///< {{ expr }}
    If,       ///< branches (condition, body); elseBody
    For,      ///< for targets in expr [if condition]: body, elseBody
    Set,      ///< set targets = expr; attribute: targets = {namespace, attr}
    SetBlock, ///< set targets[0] %}body{% endset; filters applied to the body
    Macro,    ///< macro text(params) body
    Break,
    Continue,
    Scope,       ///< a body rendered in place (generation, with: params as assignments)
    FilterBlock, ///< filter: body rendered, then piped through `filters`
  };
  Kind kind;
  int line = 0, column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::string> targets;
  bool attributeTarget = false;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, elseBody;
  std::vector<std::pair<std::string, ExprPtr>> params;
  /// Filter chains: each a Filter Expr whose args[0] is null (the body's text).
  std::vector<ExprPtr> filters;
  bool newScope = false; ///< Scope: `with` and `generation` open one.
  bool usesLoop = true;  ///< For: the body reads `loop` (else it is not built).
};

} // namespace quill::jinja
