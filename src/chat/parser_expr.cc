// Expression grammar of the template parser.
#include <algorithm>

#include "base/strings.h"
#include "chat/parser_internal.h"

namespace mtplx::chat::internal {
namespace {

// How Jinja names a token in "expected X, got Y" messages.
std::string Describe(const Token& token) {
  switch (token.type) {
    case TokenType::kData:
      return "template data";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kEof:
      return "end of template";
    case TokenType::kName:
    case TokenType::kOperator:
      return token.value;
  }
  return token.value;
}

bool IsCompareOp(const Token& token, CompareOp* op) {
  if (token.type != TokenType::kOperator) return false;
  static const std::pair<std::string_view, CompareOp> kOps[] = {
      {"==", CompareOp::kEq}, {"!=", CompareOp::kNe}, {"<", CompareOp::kLt},
      {"<=", CompareOp::kLe}, {">", CompareOp::kGt},  {">=", CompareOp::kGe}};
  for (const auto& [text, value] : kOps) {
    if (token.value == text) {
      *op = value;
      return true;
    }
  }
  return false;
}

ExprPtr Binary(ExprKind kind, const SourcePos& pos, ExprPtr lhs, ExprPtr rhs) {
  ExprPtr node = NewExpr(kind, pos);
  node->operands.push_back(std::move(lhs));
  node->operands.push_back(std::move(rhs));
  return node;
}

}  // namespace

ExprPtr NewExpr(ExprKind kind, const SourcePos& pos) {
  auto node = std::make_unique<Expr>();
  node->kind = kind;
  node->pos = pos;
  return node;
}

bool Parser::IsOp(std::string_view op) const {
  return Cur().type == TokenType::kOperator && Cur().value == op;
}

bool Parser::IsName(std::string_view name) const {
  return Cur().type == TokenType::kName && Cur().value == name;
}

bool Parser::SkipOp(std::string_view op) {
  if (!IsOp(op)) return false;
  Advance();
  return true;
}

bool Parser::SkipName(std::string_view name) {
  if (!IsName(name)) return false;
  Advance();
  return true;
}

Status Parser::Fail(const Token& token, const std::string& message) const {
  return InvalidArgument(
      StrCat("chat template: ", FormatPos(token.pos), ": syntax error: ", message));
}

Status Parser::FailUnexpected(const std::string& expected) const {
  return Fail(Cur(), StrCat("expected ", expected, ", got '", Describe(Cur()), "'"));
}

Status Parser::ExpectOp(std::string_view op) {
  if (!SkipOp(op)) return FailUnexpected(StrCat("token '", op, "'"));
  return Status::Ok();
}

Status Parser::ExpectType(TokenType type) {
  if (Cur().type != type) {
    Token wanted;
    wanted.type = type;
    return FailUnexpected(StrCat("token '", Describe(wanted), "'"));
  }
  Advance();
  return Status::Ok();
}

Result<std::string> Parser::ExpectName() {
  if (Cur().type != TokenType::kName) return FailUnexpected("token 'name'");
  std::string name = Cur().value;
  Advance();
  return name;
}

Status Parser::CheckNesting() const {
  if (nesting_ > limits_.max_nesting) return Fail(Cur(), "template is nested too deeply");
  return Status::Ok();
}

Result<ExprPtr> Parser::Seal(ExprPtr expr) const {
  int depth = 0;
  for (const ExprPtr& child : expr->operands) depth = std::max(depth, child ? child->depth : 0);
  for (const auto& [name, child] : expr->kwargs) depth = std::max(depth, child->depth);
  if (expr->dyn_args) depth = std::max(depth, expr->dyn_args->depth);
  if (expr->dyn_kwargs) depth = std::max(depth, expr->dyn_kwargs->depth);
  expr->depth = depth + 1;
  if (expr->depth > limits_.max_expr_depth) {
    return Fail(Cur(), "expression is nested too deeply");
  }
  return expr;
}

Result<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  Nesting nesting(&nesting_);
  MTPLX_RETURN_IF_ERROR(CheckNesting());
  return with_condexpr ? ParseCondExpr() : ParseOr();
}

Result<ExprPtr> Parser::ParseCondExpr() {
  SourcePos pos = Cur().pos;
  MTPLX_ASSIGN_OR_RETURN(ExprPtr expr1, ParseOr());
  while (SkipName("if")) {
    MTPLX_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
    ExprPtr otherwise;
    if (SkipName("else")) {
      Nesting nesting(&nesting_);
      MTPLX_RETURN_IF_ERROR(CheckNesting());
      MTPLX_ASSIGN_OR_RETURN(otherwise, ParseCondExpr());
    }
    ExprPtr node = NewExpr(ExprKind::kCondExpr, pos);
    node->operands.push_back(std::move(test));
    node->operands.push_back(std::move(expr1));
    node->operands.push_back(std::move(otherwise));
    MTPLX_ASSIGN_OR_RETURN(expr1, Seal(std::move(node)));
    pos = Cur().pos;
  }
  return expr1;
}

Result<ExprPtr> Parser::ParseOr() {
  MTPLX_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (IsName("or")) {
    const SourcePos pos = Cur().pos;
    Advance();
    MTPLX_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    MTPLX_ASSIGN_OR_RETURN(left,
                           Seal(Binary(ExprKind::kOr, pos, std::move(left), std::move(right))));
  }
  return left;
}

Result<ExprPtr> Parser::ParseAnd() {
  MTPLX_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (IsName("and")) {
    const SourcePos pos = Cur().pos;
    Advance();
    MTPLX_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    MTPLX_ASSIGN_OR_RETURN(left,
                           Seal(Binary(ExprKind::kAnd, pos, std::move(left), std::move(right))));
  }
  return left;
}

Result<ExprPtr> Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  const SourcePos pos = Cur().pos;
  Advance();
  Nesting nesting(&nesting_);
  MTPLX_RETURN_IF_ERROR(CheckNesting());
  ExprPtr node = NewExpr(ExprKind::kNot, pos);
  MTPLX_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
  node->operands.push_back(std::move(operand));
  return Seal(std::move(node));
}

Result<ExprPtr> Parser::ParseCompare() {
  const SourcePos pos = Cur().pos;
  MTPLX_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
  ExprPtr node = NewExpr(ExprKind::kCompare, pos);
  node->operands.push_back(std::move(first));
  while (true) {
    CompareOp op;
    if (IsCompareOp(Cur(), &op)) {
      Advance();
    } else if (SkipName("in")) {
      op = CompareOp::kIn;
    } else if (IsName("not") && Peek().type == TokenType::kName && Peek().value == "in") {
      Advance();
      Advance();
      op = CompareOp::kNotIn;
    } else {
      break;
    }
    node->compare_ops.push_back(op);
    MTPLX_ASSIGN_OR_RETURN(ExprPtr operand, ParseMath1());
    node->operands.push_back(std::move(operand));
  }
  if (node->compare_ops.empty()) return std::move(node->operands[0]);
  return Seal(std::move(node));
}

Result<ExprPtr> Parser::ParseMath1() {
  MTPLX_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
  while (IsOp("+") || IsOp("-")) {
    const SourcePos pos = Cur().pos;
    const BinaryOp op = IsOp("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    Advance();
    MTPLX_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
    ExprPtr node = Binary(ExprKind::kBinary, pos, std::move(left), std::move(right));
    node->binary_op = op;
    MTPLX_ASSIGN_OR_RETURN(left, Seal(std::move(node)));
  }
  return left;
}

Result<ExprPtr> Parser::ParseConcat() {
  const SourcePos pos = Cur().pos;
  MTPLX_ASSIGN_OR_RETURN(ExprPtr first, ParseMath2());
  if (!IsOp("~")) return first;
  ExprPtr node = NewExpr(ExprKind::kConcat, pos);
  node->operands.push_back(std::move(first));
  while (SkipOp("~")) {
    MTPLX_ASSIGN_OR_RETURN(ExprPtr part, ParseMath2());
    node->operands.push_back(std::move(part));
  }
  return Seal(std::move(node));
}

Result<ExprPtr> Parser::ParseMath2() {
  MTPLX_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const SourcePos pos = Cur().pos;
    const BinaryOp op = IsOp("*")    ? BinaryOp::kMul
                        : IsOp("/")  ? BinaryOp::kDiv
                        : IsOp("//") ? BinaryOp::kFloorDiv
                                     : BinaryOp::kMod;
    Advance();
    MTPLX_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
    ExprPtr node = Binary(ExprKind::kBinary, pos, std::move(left), std::move(right));
    node->binary_op = op;
    MTPLX_ASSIGN_OR_RETURN(left, Seal(std::move(node)));
  }
  return left;
}

Result<ExprPtr> Parser::ParsePow() {
  MTPLX_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary());
  while (IsOp("**")) {
    const SourcePos pos = Cur().pos;
    Advance();
    MTPLX_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary());
    ExprPtr node = Binary(ExprKind::kBinary, pos, std::move(left), std::move(right));
    node->binary_op = BinaryOp::kPow;
    MTPLX_ASSIGN_OR_RETURN(left, Seal(std::move(node)));
  }
  return left;
}

Result<ExprPtr> Parser::ParseUnary(bool with_filter) {
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    node = NewExpr(IsOp("-") ? ExprKind::kNeg : ExprKind::kPos, Cur().pos);
    Advance();
    Nesting nesting(&nesting_);
    MTPLX_RETURN_IF_ERROR(CheckNesting());
    MTPLX_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
    node->operands.push_back(std::move(operand));
    MTPLX_ASSIGN_OR_RETURN(node, Seal(std::move(node)));
  } else {
    MTPLX_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  MTPLX_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) return ParseFilterExpr(std::move(node));
  return node;
}

Result<ExprPtr> Parser::ParsePrimary() {
  const Token& token = Cur();
  ExprPtr node = NewExpr(ExprKind::kConst, token.pos);
  switch (token.type) {
    case TokenType::kName:
      if (token.value == "true" || token.value == "True") {
        node->constant = Value::Bool(true);
      } else if (token.value == "false" || token.value == "False") {
        node->constant = Value::Bool(false);
      } else if (token.value == "none" || token.value == "None") {
        node->constant = Value::None();
      } else {
        node->kind = ExprKind::kName;
        node->name = token.value;
      }
      Advance();
      return node;
    case TokenType::kString: {
      std::string text;
      while (Cur().type == TokenType::kString) {  // adjacent literals concatenate
        text += Cur().value;
        Advance();
      }
      node->constant = Value::String(std::move(text));
      return node;
    }
    case TokenType::kInteger:
      node->constant = Value::Int(token.int_value);
      Advance();
      return node;
    case TokenType::kFloat:
      node->constant = Value::Float(token.float_value);
      Advance();
      return node;
    default:
      break;
  }
  if (IsOp("(")) {
    Advance();
    MTPLX_ASSIGN_OR_RETURN(ExprPtr inner, ParseTuple(true, {}, true));
    MTPLX_RETURN_IF_ERROR(ExpectOp(")"));
    return inner;
  }
  if (IsOp("[")) return ParseList();
  if (IsOp("{")) return ParseDict();
  return Fail(token, StrCat("unexpected '", Describe(token), "'"));
}

bool Parser::IsTupleEnd(std::initializer_list<std::string_view> end_names) const {
  const Token& token = Cur();
  if (token.type == TokenType::kVariableEnd || token.type == TokenType::kBlockEnd ||
      token.type == TokenType::kEof || IsOp(")")) {
    return true;
  }
  if (token.type != TokenType::kName) return false;
  return std::find(end_names.begin(), end_names.end(), token.value) != end_names.end();
}

Result<ExprPtr> Parser::ParseTuple(bool with_condexpr,
                                   std::initializer_list<std::string_view> end_names,
                                   bool explicit_parentheses) {
  const SourcePos pos = Cur().pos;
  ExprPtr tuple = NewExpr(ExprKind::kTuple, pos);
  bool is_tuple = false;
  while (true) {
    if (!tuple->operands.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(end_names)) break;
    MTPLX_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(with_condexpr));
    tuple->operands.push_back(std::move(item));
    if (!IsOp(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!tuple->operands.empty()) return std::move(tuple->operands[0]);
    if (!explicit_parentheses) {
      return Fail(Cur(), StrCat("Expected an expression, got '", Describe(Cur()), "'"));
    }
  }
  return Seal(std::move(tuple));
}

Result<ExprPtr> Parser::ParseList() {
  ExprPtr list = NewExpr(ExprKind::kList, Cur().pos);
  MTPLX_RETURN_IF_ERROR(ExpectOp("["));
  while (!IsOp("]")) {
    if (!list->operands.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    if (IsOp("]")) break;
    MTPLX_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
    list->operands.push_back(std::move(item));
  }
  MTPLX_RETURN_IF_ERROR(ExpectOp("]"));
  return Seal(std::move(list));
}

Result<ExprPtr> Parser::ParseDict() {
  ExprPtr dict = NewExpr(ExprKind::kDict, Cur().pos);
  MTPLX_RETURN_IF_ERROR(ExpectOp("{"));
  while (!IsOp("}")) {
    if (!dict->operands.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    if (IsOp("}")) break;
    MTPLX_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
    MTPLX_RETURN_IF_ERROR(ExpectOp(":"));
    MTPLX_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
    dict->operands.push_back(std::move(key));
    dict->operands.push_back(std::move(value));
  }
  MTPLX_RETURN_IF_ERROR(ExpectOp("}"));
  return Seal(std::move(dict));
}

Result<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      MTPLX_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
    } else if (IsOp("(")) {
      MTPLX_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      MTPLX_ASSIGN_OR_RETURN(node, ParseFilter(std::move(node), false));
    } else if (IsName("is")) {
      MTPLX_ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
    } else if (IsOp("(")) {
      MTPLX_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
  const Token token = Cur();
  Advance();
  if (token.value == ".") {
    const Token attr = Cur();
    Advance();
    if (attr.type == TokenType::kName) {
      ExprPtr get = NewExpr(ExprKind::kGetAttr, token.pos);
      get->name = attr.value;
      get->operands.push_back(std::move(node));
      return Seal(std::move(get));
    }
    if (attr.type != TokenType::kInteger) return Fail(attr, "expected name or number");
    ExprPtr index = NewExpr(ExprKind::kConst, attr.pos);
    index->constant = Value::Int(attr.int_value);
    ExprPtr get = Binary(ExprKind::kGetItem, token.pos, std::move(node), std::move(index));
    return Seal(std::move(get));
  }
  ExprPtr args = NewExpr(ExprKind::kTuple, token.pos);
  while (!IsOp("]")) {
    if (!args->operands.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    MTPLX_ASSIGN_OR_RETURN(ExprPtr arg, ParseSubscribed());
    args->operands.push_back(std::move(arg));
  }
  MTPLX_RETURN_IF_ERROR(ExpectOp("]"));
  if (args->operands.empty()) return Fail(token, "expected subscript expression");
  ExprPtr index;
  if (args->operands.size() == 1) {
    index = std::move(args->operands[0]);
  } else {
    MTPLX_ASSIGN_OR_RETURN(index, Seal(std::move(args)));
  }
  return Seal(Binary(ExprKind::kGetItem, token.pos, std::move(node), std::move(index)));
}

Result<ExprPtr> Parser::ParseSubscribed() {
  const SourcePos pos = Cur().pos;
  ExprPtr slice = NewExpr(ExprKind::kSlice, pos);
  if (IsOp(":")) {
    Advance();
    slice->operands.push_back(nullptr);
  } else {
    MTPLX_ASSIGN_OR_RETURN(ExprPtr node, ParseExpression());
    if (!IsOp(":")) return node;
    Advance();
    slice->operands.push_back(std::move(node));
  }
  const auto optional_bound = [&]() -> Result<ExprPtr> {
    if (IsOp(":") || IsOp("]") || IsOp(",")) return ExprPtr();
    return ParseExpression();
  };
  MTPLX_ASSIGN_OR_RETURN(ExprPtr stop, optional_bound());
  slice->operands.push_back(std::move(stop));
  ExprPtr step;
  if (SkipOp(":")) {
    MTPLX_ASSIGN_OR_RETURN(step, optional_bound());
  }
  slice->operands.push_back(std::move(step));
  return Seal(std::move(slice));
}

Status Parser::ParseCallArgs(Expr* call) {
  const Token open = Cur();
  MTPLX_RETURN_IF_ERROR(ExpectOp("("));
  bool require_comma = false;
  const auto ensure = [&](bool ok) {
    return ok ? Status::Ok() : Fail(open, "invalid syntax for function call expression");
  };
  while (!IsOp(")")) {
    if (require_comma) {
      MTPLX_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
    }
    if (SkipOp("*")) {
      MTPLX_RETURN_IF_ERROR(ensure(!call->dyn_args && !call->dyn_kwargs));
      MTPLX_ASSIGN_OR_RETURN(call->dyn_args, ParseExpression());
    } else if (SkipOp("**")) {
      MTPLX_RETURN_IF_ERROR(ensure(!call->dyn_kwargs));
      MTPLX_ASSIGN_OR_RETURN(call->dyn_kwargs, ParseExpression());
    } else if (Cur().type == TokenType::kName && Peek().type == TokenType::kOperator &&
               Peek().value == "=") {
      MTPLX_RETURN_IF_ERROR(ensure(!call->dyn_kwargs));
      std::string key = Cur().value;
      Advance();
      Advance();
      MTPLX_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      call->kwargs.emplace_back(std::move(key), std::move(value));
    } else {
      MTPLX_RETURN_IF_ERROR(ensure(!call->dyn_args && !call->dyn_kwargs && call->kwargs.empty()));
      MTPLX_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      call->operands.push_back(std::move(value));
    }
    require_comma = true;
  }
  return ExpectOp(")");
}

Result<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  // Errors raised by the call (raise_exception) point at the start of the callee.
  ExprPtr call = NewExpr(ExprKind::kCall, callee->pos);
  call->operands.push_back(std::move(callee));
  MTPLX_RETURN_IF_ERROR(ParseCallArgs(call.get()));
  return Seal(std::move(call));
}

Result<ExprPtr> Parser::ParseFilter(ExprPtr subject, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Advance();
    start_inline = false;
    ExprPtr filter = NewExpr(ExprKind::kFilter, Cur().pos);
    MTPLX_ASSIGN_OR_RETURN(filter->name, ExpectName());
    while (SkipOp(".")) {
      MTPLX_ASSIGN_OR_RETURN(std::string part, ExpectName());
      filter->name += "." + part;
    }
    filter->operands.push_back(std::move(subject));
    if (IsOp("(")) MTPLX_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
    MTPLX_ASSIGN_OR_RETURN(subject, Seal(std::move(filter)));
  }
  return subject;
}

Result<ExprPtr> Parser::ParseTest(ExprPtr subject) {
  const SourcePos pos = Cur().pos;
  Advance();  // "is"
  const bool negated = SkipName("not");
  ExprPtr test = NewExpr(ExprKind::kTest, pos);
  MTPLX_ASSIGN_OR_RETURN(test->name, ExpectName());
  while (SkipOp(".")) {
    MTPLX_ASSIGN_OR_RETURN(std::string part, ExpectName());
    test->name += "." + part;
  }
  test->operands.push_back(std::move(subject));
  const TokenType type = Cur().type;
  const bool starts_argument = type == TokenType::kName || type == TokenType::kString ||
                               type == TokenType::kInteger || type == TokenType::kFloat ||
                               IsOp("[") || IsOp("{");
  if (IsOp("(")) {
    MTPLX_RETURN_IF_ERROR(ParseCallArgs(test.get()));
  } else if (starts_argument && !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return Fail(Cur(), "You cannot chain multiple tests with is");
    MTPLX_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
    MTPLX_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    test->operands.push_back(std::move(arg));
  }
  MTPLX_ASSIGN_OR_RETURN(test, Seal(std::move(test)));
  if (!negated) return test;
  ExprPtr node = NewExpr(ExprKind::kNot, pos);
  node->operands.push_back(std::move(test));
  return Seal(std::move(node));
}

}  // namespace mtplx::chat::internal
