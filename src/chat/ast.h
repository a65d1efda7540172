// Syntax tree of a parsed template. Nodes are plain structs ("fat nodes" with a kind tag); the
// interpreter switches on the kind. Every node keeps its source position for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/lexer.h"
#include "chat/value.h"

namespace mtplx::chat {

enum class ExprKind {
  kConst,
  kName,
  kList,
  kTuple,
  kDict,
  kGetAttr,  // operands: [object]; name: attribute
  kGetItem,  // operands: [object, index]
  kSlice,    // operands: [start, stop, step], each may be null
  kCall,     // operands: [callee, positional args...]
  kFilter,   // operands: [subject (null inside filter blocks), args...]; name: filter
  kTest,     // operands: [subject, args...]; name: test
  kNot,      // operands: [operand]
  kNeg,
  kPos,
  kBinary,   // operands: [lhs, rhs]
  kConcat,   // operands: parts joined with ~
  kCompare,  // operands[0] op[0] operands[1] op[1] operands[2] ...
  kAnd,      // operands: [lhs, rhs]
  kOr,
  kCondExpr,  // operands: [test, value if true, value if false (may be null)]
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kConst;
  SourcePos pos;
  int depth = 1;  // height of the subtree, bounded so evaluation cannot exhaust the stack
  Value constant;
  std::string name;
  BinaryOp binary_op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
  std::vector<ExprPtr> operands;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args;    // f(*args)
  ExprPtr dyn_kwargs;  // f(**kwargs)
};

// The left side of `set` and `for`: a name, a tuple of names, or a namespace attribute.
struct AssignTarget {
  enum class Kind { kName, kTuple, kNamespaceAttr };
  Kind kind = Kind::kName;
  std::vector<std::string> names;  // the name, the tuple's names, or the namespace variable
  std::string attr;                // kNamespaceAttr
};

enum class StmtKind {
  kText,         // template data
  kPrint,        // {{ expr }}
  kIf,           // branches (if and elifs), else_body
  kFor,          // target, expr (iterable), condition, body, else_body
  kSet,          // target, expr
  kSetBlock,     // target, body, expr (filter chain or null)
  kMacro,        // macro
  kCallBlock,    // macro (the caller), expr (the call)
  kFilterBlock,  // expr (filter chain), body
  kWith,         // with_names, with_values, body
  kBreak,
  kContinue,
  kScope,  // body run in place ({% generation %} from transformers' AssistantTracker)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // defaults of the last defaults.size() params
  Body body;
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  AssignTarget target;
  std::unique_ptr<MacroDef> macro;
  std::vector<std::string> with_names;
  std::vector<ExprPtr> with_values;
};

}  // namespace mtplx::chat
