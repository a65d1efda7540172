// Statement grammar of the template parser: for, if, set, macro, call, filter, with, print,
// break/continue (jinja2.ext.loopcontrols) and generation (transformers' AssistantTracker).
#include <algorithm>

#include "base/strings.h"
#include "chat/parser_internal.h"

namespace mtplx::chat {
namespace internal {
namespace {

std::string QuoteList(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += StrCat("'", names[i], "'");
  }
  return out;
}

StmtPtr NewStmt(StmtKind kind, const SourcePos& pos) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = kind;
  stmt->pos = pos;
  return stmt;
}

}  // namespace

Result<Body> Parser::ParseAll() { return Subparse({}); }

Result<Body> Parser::Subparse(const std::vector<std::string_view>& end_names) {
  Body body;
  while (Cur().type != TokenType::kEof) {
    const Token& token = Cur();
    if (token.type == TokenType::kData) {
      StmtPtr text = NewStmt(StmtKind::kText, token.pos);
      text->text = token.value;
      body.push_back(std::move(text));
      Advance();
    } else if (token.type == TokenType::kVariableBegin) {
      StmtPtr print = NewStmt(StmtKind::kPrint, token.pos);
      Advance();
      MTPLX_ASSIGN_OR_RETURN(print->expr, ParseTuple(true, {}, false));
      MTPLX_RETURN_IF_ERROR(ExpectType(TokenType::kVariableEnd));
      body.push_back(std::move(print));
    } else if (token.type == TokenType::kBlockBegin) {
      Advance();
      if (Cur().type == TokenType::kName &&
          std::find(end_names.begin(), end_names.end(), Cur().value) != end_names.end()) {
        return body;
      }
      MTPLX_ASSIGN_OR_RETURN(StmtPtr stmt, ParseStatement());
      body.push_back(std::move(stmt));
      MTPLX_RETURN_IF_ERROR(ExpectType(TokenType::kBlockEnd));
    } else {
      return Fail(token, "unexpected token");
    }
  }
  return body;
}

Result<Body> Parser::ParseStatements(const std::vector<std::string_view>& end_names,
                                     bool drop_needle) {
  SkipOp(":");
  MTPLX_RETURN_IF_ERROR(ExpectType(TokenType::kBlockEnd));
  end_stack_.push_back(end_names);
  Result<Body> body = Subparse(end_names);
  end_stack_.pop_back();
  if (!body.ok()) return body.status();
  if (Cur().type == TokenType::kEof) {
    return Fail(Cur(), StrCat("Unexpected end of template. Jinja was looking for the following "
                              "tags: ",
                              QuoteList(end_names), "."));
  }
  if (drop_needle) Advance();
  return body;
}

Result<StmtPtr> Parser::ParseStatement() {
  const Token tag = Cur();
  if (tag.type != TokenType::kName) return Fail(tag, "tag name expected");
  Nesting nesting(&nesting_);
  MTPLX_RETURN_IF_ERROR(CheckNesting());
  const std::string& name = tag.value;
  if (name == "for") return ParseFor(tag);
  if (name == "if") return ParseIf(tag);
  if (name == "set") return ParseSet(tag);
  if (name == "macro") return ParseMacro(tag);
  if (name == "call") return ParseCallBlock(tag);
  if (name == "filter") return ParseFilterBlock(tag);
  if (name == "with") return ParseWith(tag);
  if (name == "print") return ParsePrint(tag);
  if (name == "break" || name == "continue") return ParseLoopControl(tag);
  if (name == "generation") return ParseGeneration(tag);
  static constexpr std::string_view kUnsupported[] = {"block",  "extends", "include",
                                                      "import", "from",    "autoescape"};
  if (std::find(std::begin(kUnsupported), std::end(kUnsupported), name) != std::end(kUnsupported)) {
    return Fail(tag, StrCat("the '", name, "' tag is not supported in chat templates"));
  }
  std::string message = StrCat("Encountered unknown tag '", name, "'.");
  if (!end_stack_.empty()) {
    message +=
        StrCat(" Jinja was looking for the following tags: ", QuoteList(end_stack_.back()), ".");
  }
  return Fail(tag, message);
}

Result<AssignTarget> Parser::ParseAssignTarget(bool with_namespace,
                                               std::initializer_list<std::string_view> end_names) {
  AssignTarget target;
  bool is_tuple = false;
  while (true) {
    if (!target.names.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(end_names)) break;
    const Token token = Cur();
    if (token.type != TokenType::kName) {
      return Fail(token, StrCat("can't assign to '", token.value, "'"));
    }
    static constexpr std::string_view kConstants[] = {"true",  "false", "True",
                                                      "False", "none",  "None"};
    if (std::find(std::begin(kConstants), std::end(kConstants), token.value) !=
        std::end(kConstants)) {
      return Fail(token, "can't assign to 'const'");
    }
    Advance();
    target.names.push_back(token.value);
    if (with_namespace && SkipOp(".")) {
      MTPLX_ASSIGN_OR_RETURN(target.attr, ExpectName());
      target.kind = AssignTarget::Kind::kNamespaceAttr;
    }
    if (!IsOp(",")) break;
    is_tuple = true;
  }
  if (target.names.empty()) {
    return Fail(Cur(), StrCat("Expected an expression, got '", Cur().value, "'"));
  }
  if (is_tuple) {
    if (target.kind == AssignTarget::Kind::kNamespaceAttr) {
      return Fail(Cur(), "namespace attributes cannot be assigned in a tuple");
    }
    target.kind = AssignTarget::Kind::kTuple;
  }
  return target;
}

Result<StmtPtr> Parser::ParseFor(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kFor, tag.pos);
  MTPLX_ASSIGN_OR_RETURN(stmt->target, ParseAssignTarget(false, {"in"}));
  if (!SkipName("in")) return FailUnexpected("token 'in'");
  MTPLX_ASSIGN_OR_RETURN(stmt->expr, ParseTuple(false, {"recursive"}, false));
  if (SkipName("if")) {
    MTPLX_ASSIGN_OR_RETURN(stmt->condition, ParseExpression());
  }
  if (IsName("recursive")) return Fail(Cur(), "recursive loops are not supported");
  ++loop_depth_;
  Result<Body> body = ParseStatements({"endfor", "else"}, false);
  --loop_depth_;
  if (!body.ok()) return body.status();
  stmt->body = std::move(body).value();
  const bool has_else = Cur().value == "else";
  Advance();
  if (has_else) {
    MTPLX_ASSIGN_OR_RETURN(stmt->else_body, ParseStatements({"endfor"}, true));
  }
  return stmt;
}

Result<StmtPtr> Parser::ParseIf(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kIf, tag.pos);
  while (true) {
    MTPLX_ASSIGN_OR_RETURN(ExprPtr test, ParseTuple(false, {}, false));
    MTPLX_ASSIGN_OR_RETURN(Body body, ParseStatements({"elif", "else", "endif"}, false));
    stmt->branches.emplace_back(std::move(test), std::move(body));
    const std::string keyword = Cur().value;
    Advance();
    if (keyword == "elif") continue;
    if (keyword == "else") {
      MTPLX_ASSIGN_OR_RETURN(stmt->else_body, ParseStatements({"endif"}, true));
    }
    return stmt;
  }
}

Result<StmtPtr> Parser::ParseSet(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kSet, tag.pos);
  MTPLX_ASSIGN_OR_RETURN(stmt->target, ParseAssignTarget(true, {}));
  if (SkipOp("=")) {
    MTPLX_ASSIGN_OR_RETURN(stmt->expr, ParseTuple(true, {}, false));
    return stmt;
  }
  stmt->kind = StmtKind::kSetBlock;
  if (IsOp("|")) {
    MTPLX_ASSIGN_OR_RETURN(stmt->expr, ParseFilter(nullptr, false));
  }
  MTPLX_ASSIGN_OR_RETURN(stmt->body, ParseStatements({"endset"}, true));
  return stmt;
}

Status Parser::ParseSignature(MacroDef* macro) {
  MTPLX_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (!macro->params.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    MTPLX_ASSIGN_OR_RETURN(std::string param, ExpectName());
    if (SkipOp("=")) {
      MTPLX_ASSIGN_OR_RETURN(ExprPtr fallback, ParseExpression());
      macro->defaults.push_back(std::move(fallback));
    } else if (!macro->defaults.empty()) {
      return Fail(Cur(), "non-default argument follows default argument");
    }
    macro->params.push_back(std::move(param));
  }
  return ExpectOp(")");
}

Result<StmtPtr> Parser::ParseMacro(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kMacro, tag.pos);
  stmt->macro = std::make_unique<MacroDef>();
  MTPLX_ASSIGN_OR_RETURN(stmt->macro->name, ExpectName());
  MTPLX_RETURN_IF_ERROR(ParseSignature(stmt->macro.get()));
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;  // break inside a macro cannot leave the caller's loop
  Result<Body> body = ParseStatements({"endmacro"}, true);
  loop_depth_ = saved_loop_depth;
  if (!body.ok()) return body.status();
  stmt->macro->body = std::move(body).value();
  return stmt;
}

Result<StmtPtr> Parser::ParseCallBlock(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kCallBlock, tag.pos);
  stmt->macro = std::make_unique<MacroDef>();
  stmt->macro->name = "caller";
  if (IsOp("(")) MTPLX_RETURN_IF_ERROR(ParseSignature(stmt->macro.get()));
  MTPLX_ASSIGN_OR_RETURN(stmt->expr, ParseExpression());
  if (stmt->expr->kind != ExprKind::kCall) return Fail(tag, "expected call");
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  Result<Body> body = ParseStatements({"endcall"}, true);
  loop_depth_ = saved_loop_depth;
  if (!body.ok()) return body.status();
  stmt->macro->body = std::move(body).value();
  return stmt;
}

Result<StmtPtr> Parser::ParseFilterBlock(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kFilterBlock, tag.pos);
  MTPLX_ASSIGN_OR_RETURN(stmt->expr, ParseFilter(nullptr, true));
  MTPLX_ASSIGN_OR_RETURN(stmt->body, ParseStatements({"endfilter"}, true));
  return stmt;
}

Result<StmtPtr> Parser::ParseWith(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kWith, tag.pos);
  while (Cur().type != TokenType::kBlockEnd && Cur().type != TokenType::kEof) {
    if (!stmt->with_names.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    MTPLX_ASSIGN_OR_RETURN(std::string name, ExpectName());
    MTPLX_RETURN_IF_ERROR(ExpectOp("="));
    MTPLX_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
    stmt->with_names.push_back(std::move(name));
    stmt->with_values.push_back(std::move(value));
  }
  MTPLX_ASSIGN_OR_RETURN(stmt->body, ParseStatements({"endwith"}, true));
  return stmt;
}

Result<StmtPtr> Parser::ParsePrint(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kScope, tag.pos);
  while (Cur().type != TokenType::kBlockEnd && Cur().type != TokenType::kEof) {
    if (!stmt->body.empty()) MTPLX_RETURN_IF_ERROR(ExpectOp(","));
    StmtPtr print = NewStmt(StmtKind::kPrint, Cur().pos);
    MTPLX_ASSIGN_OR_RETURN(print->expr, ParseExpression());
    stmt->body.push_back(std::move(print));
  }
  return stmt;
}

Result<StmtPtr> Parser::ParseLoopControl(const Token& tag) {
  if (loop_depth_ == 0) return Fail(tag, StrCat("'", tag.value, "' outside of a loop"));
  Advance();
  return NewStmt(tag.value == "break" ? StmtKind::kBreak : StmtKind::kContinue, tag.pos);
}

Result<StmtPtr> Parser::ParseGeneration(const Token& tag) {
  Advance();
  StmtPtr stmt = NewStmt(StmtKind::kScope, tag.pos);
  MTPLX_ASSIGN_OR_RETURN(stmt->body, ParseStatements({"endgeneration"}, true));
  return stmt;
}

}  // namespace internal

Result<Body> ParseTemplate(std::string_view source, const ParseLimits& limits) {
  MTPLX_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  internal::Parser parser(std::move(tokens), limits);
  return parser.ParseAll();
}

}  // namespace mtplx::chat
