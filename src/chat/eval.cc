// Expression evaluation of the interpreter.
#include "base/strings.h"
#include "chat/interpreter.h"
#include "chat/value_ops.h"

namespace mtplx::chat {

Result<Value> Interpreter::Eval(const Expr& expr, const ScopePtr& scope) {
  ++depth_;
  Result<Value> value = depth_ > limits_.max_depth ? CheckDepth() : EvalExpr(expr, scope);
  --depth_;
  if (!value.ok()) return Locate(value.status(), expr.pos);
  return value;
}

Result<Value> Interpreter::EvalExpr(const Expr& expr, const ScopePtr& scope) {
  MTPLX_RETURN_IF_ERROR(Step());
  switch (expr.kind) {
    case ExprKind::kConst:
      return expr.constant;
    case ExprKind::kName: {
      const Value* value = scope->Find(expr.name);
      if (value != nullptr) return *value;
      return Value::Undefined(StrCat("'", expr.name, "' is undefined"));
    }
    case ExprKind::kList:
    case ExprKind::kTuple:
      return EvalItems(expr, scope);
    case ExprKind::kDict:
      return EvalDict(expr, scope);
    case ExprKind::kGetAttr: {
      MTPLX_ASSIGN_OR_RETURN(const Value object, Eval(*expr.operands[0], scope));
      return GetAttr(object, expr.name);
    }
    case ExprKind::kGetItem:
      return EvalGetItem(expr, scope);
    case ExprKind::kSlice:
      return Unimplemented("a slice can only appear as a subscript");
    case ExprKind::kCall:
      return EvalCall(expr, scope, nullptr);
    case ExprKind::kFilter:
    case ExprKind::kTest:
      return EvalFilterOrTest(expr, scope);
    case ExprKind::kNot: {
      MTPLX_ASSIGN_OR_RETURN(const Value operand, Eval(*expr.operands[0], scope));
      return Value::Bool(!operand.Truthy());
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      MTPLX_ASSIGN_OR_RETURN(const Value operand, Eval(*expr.operands[0], scope));
      return EvalUnary(expr.kind, operand);
    }
    case ExprKind::kBinary: {
      MTPLX_ASSIGN_OR_RETURN(const Value lhs, Eval(*expr.operands[0], scope));
      MTPLX_ASSIGN_OR_RETURN(const Value rhs, Eval(*expr.operands[1], scope));
      return EvalBinary(expr.binary_op, lhs, rhs, limits_.max_output_bytes);
    }
    case ExprKind::kConcat:
      return EvalConcat(expr, scope);
    case ExprKind::kCompare:
      return EvalCompare(expr, scope);
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kCondExpr:
      return EvalConditional(expr, scope);
  }
  return Internal("unknown expression kind");
}

Result<Value> Interpreter::EvalFilterOrTest(const Expr& expr, const ScopePtr& scope) {
  MTPLX_ASSIGN_OR_RETURN(const Value subject, Eval(*expr.operands[0], scope));
  MTPLX_ASSIGN_OR_RETURN(const CallArgs args, EvalArgs(expr, 1, scope));
  if (expr.kind == ExprKind::kFilter) return ApplyFilter(expr.name, subject, args);
  MTPLX_ASSIGN_OR_RETURN(const bool passed, ApplyTest(expr.name, subject, args));
  return Value::Bool(passed);
}

Result<Value> Interpreter::EvalConditional(const Expr& expr, const ScopePtr& scope) {
  MTPLX_ASSIGN_OR_RETURN(Value first, Eval(*expr.operands[0], scope));
  if (expr.kind != ExprKind::kCondExpr) {
    // Python returns the deciding operand, not a bool: {{ x or 'default' }}.
    if (first.Truthy() == (expr.kind == ExprKind::kOr)) return first;
    return Eval(*expr.operands[1], scope);
  }
  if (first.Truthy()) return Eval(*expr.operands[1], scope);
  if (expr.operands[2]) return Eval(*expr.operands[2], scope);
  return Value::Undefined(
      "the inline if-expression evaluated to false and no else section was defined.");
}

Result<Value> Interpreter::EvalItems(const Expr& expr, const ScopePtr& scope) {
  std::vector<Value> items;
  items.reserve(expr.operands.size());
  for (const ExprPtr& operand : expr.operands) {
    MTPLX_ASSIGN_OR_RETURN(Value item, Eval(*operand, scope));
    items.push_back(std::move(item));
  }
  return expr.kind == ExprKind::kTuple ? Value::Tuple(std::move(items))
                                       : Value::List(std::move(items));
}

Result<Value> Interpreter::EvalDict(const Expr& expr, const ScopePtr& scope) {
  auto data = std::make_shared<DictData>();
  for (size_t i = 0; i + 1 < expr.operands.size(); i += 2) {
    MTPLX_ASSIGN_OR_RETURN(const Value key, Eval(*expr.operands[i], scope));
    const std::optional<MarkedString> encoded = EncodeDictKey(key);
    if (!encoded) {
      return InvalidArgument(StrCat("TypeError: unhashable type: '", TypeName(key), "'"));
    }
    MTPLX_ASSIGN_OR_RETURN(Value value, Eval(*expr.operands[i + 1], scope));
    data->Set(*encoded, std::move(value));  // a repeated key keeps the last value
  }
  return Value::Dict(std::move(data));
}

Result<Value> Interpreter::EvalGetItem(const Expr& expr, const ScopePtr& scope) {
  MTPLX_ASSIGN_OR_RETURN(const Value object, Eval(*expr.operands[0], scope));
  const Expr& index = *expr.operands[1];
  if (index.kind != ExprKind::kSlice) {
    MTPLX_ASSIGN_OR_RETURN(const Value key, Eval(index, scope));
    return GetItem(object, key);
  }
  Value bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (index.operands[i]) {
      MTPLX_ASSIGN_OR_RETURN(bounds[i], Eval(*index.operands[i], scope));
    } else {
      bounds[i] = Value::None();
    }
  }
  return GetSlice(object, bounds[0], bounds[1], bounds[2]);
}

Result<Value> Interpreter::EvalCompare(const Expr& expr, const ScopePtr& scope) {
  MTPLX_ASSIGN_OR_RETURN(Value lhs, Eval(*expr.operands[0], scope));
  for (size_t i = 0; i < expr.compare_ops.size(); ++i) {
    MTPLX_ASSIGN_OR_RETURN(Value rhs, Eval(*expr.operands[i + 1], scope));
    MTPLX_ASSIGN_OR_RETURN(const bool holds, chat::EvalCompare(expr.compare_ops[i], lhs, rhs));
    if (!holds) return Value::Bool(false);
    lhs = std::move(rhs);
  }
  return Value::Bool(true);
}

Result<Value> Interpreter::EvalConcat(const Expr& expr, const ScopePtr& scope) {
  MarkedString out;
  for (const ExprPtr& operand : expr.operands) {
    MTPLX_ASSIGN_OR_RETURN(const Value part, Eval(*operand, scope));
    const MarkedString text = ToStr(part);
    MTPLX_RETURN_IF_ERROR(CheckSize(out.size() + text.size()));
    out.Append(text);
  }
  return Value::String(std::move(out));
}

Result<CallArgs> Interpreter::EvalArgs(const Expr& expr, size_t first, const ScopePtr& scope) {
  CallArgs args;
  for (size_t i = first; i < expr.operands.size(); ++i) {
    MTPLX_ASSIGN_OR_RETURN(Value value, Eval(*expr.operands[i], scope));
    args.positional.push_back(std::move(value));
  }
  for (const auto& [name, value_expr] : expr.kwargs) {
    MTPLX_ASSIGN_OR_RETURN(Value value, Eval(*value_expr, scope));
    args.keyword.emplace_back(name, std::move(value));
  }
  if (expr.dyn_args) {
    MTPLX_ASSIGN_OR_RETURN(const Value extra, Eval(*expr.dyn_args, scope));
    MTPLX_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(extra));
    for (Value& item : items) args.positional.push_back(std::move(item));
  }
  if (expr.dyn_kwargs) {
    MTPLX_ASSIGN_OR_RETURN(const Value extra, Eval(*expr.dyn_kwargs, scope));
    if (!extra.is_dict()) {
      return InvalidArgument(
          StrCat("TypeError: argument after ** must be a mapping, not ", TypeName(extra)));
    }
    for (const auto& [key, value] : extra.AsDict().entries) {
      args.keyword.emplace_back(key.text(), value);
    }
  }
  return args;
}

Result<Value> Interpreter::EvalCall(const Expr& expr, const ScopePtr& scope, const Value* caller) {
  MTPLX_ASSIGN_OR_RETURN(const Value callee, Eval(*expr.operands[0], scope));
  MTPLX_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, scope));
  if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
  return Call(callee, args);
}

Result<Value> Interpreter::EvalFilterChain(const Expr& expr, const ScopePtr& scope,
                                           const Value& block) {
  Value subject = block;
  if (expr.operands[0]) {
    MTPLX_ASSIGN_OR_RETURN(subject, EvalFilterChain(*expr.operands[0], scope, block));
  }
  Result<CallArgs> args = EvalArgs(expr, 1, scope);
  if (!args.ok()) return Locate(args.status(), expr.pos);
  Result<Value> result = ApplyFilter(expr.name, subject, *args);
  if (!result.ok()) return Locate(result.status(), expr.pos);
  return result;
}

}  // namespace mtplx::chat
