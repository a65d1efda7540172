// The Parser class shared by parser_expr.cc (expressions) and parser_stmt.cc (statements).
// Internal to the chat library.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/parser.h"

namespace mtplx::chat::internal {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParseLimits& limits)
      : tokens_(std::move(tokens)), limits_(limits) {}

  Result<Body> ParseAll();

 private:
  // Counts nesting for as long as it lives; the parser fails past ParseLimits::max_nesting.
  class Nesting {
   public:
    explicit Nesting(int* depth) : depth_(depth) { ++*depth_; }
    ~Nesting() { --*depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    int* depth_;
  };

  // Token stream.
  const Token& Cur() const { return tokens_[index_]; }
  const Token& Peek() const { return tokens_[std::min(index_ + 1, tokens_.size() - 1)]; }
  void Advance() {
    if (index_ + 1 < tokens_.size()) ++index_;
  }
  bool IsOp(std::string_view op) const;
  bool IsName(std::string_view name) const;
  bool SkipOp(std::string_view op);
  bool SkipName(std::string_view name);
  Status ExpectOp(std::string_view op);
  Status ExpectType(TokenType type);
  Result<std::string> ExpectName();
  Status Fail(const Token& token, const std::string& message) const;
  Status FailUnexpected(const std::string& expected) const;
  Status CheckNesting() const;
  Result<ExprPtr> Seal(ExprPtr expr) const;

  // Expressions (parser_expr.cc).
  Result<ExprPtr> ParseExpression(bool with_condexpr = true);
  Result<ExprPtr> ParseCondExpr();
  Result<ExprPtr> ParseOr();
  Result<ExprPtr> ParseAnd();
  Result<ExprPtr> ParseNot();
  Result<ExprPtr> ParseCompare();
  Result<ExprPtr> ParseMath1();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseMath2();
  Result<ExprPtr> ParsePow();
  Result<ExprPtr> ParseUnary(bool with_filter = true);
  Result<ExprPtr> ParsePrimary();
  Result<ExprPtr> ParseTuple(bool with_condexpr, std::initializer_list<std::string_view> end_names,
                             bool explicit_parentheses);
  Result<ExprPtr> ParseList();
  Result<ExprPtr> ParseDict();
  Result<ExprPtr> ParsePostfix(ExprPtr node);
  Result<ExprPtr> ParseFilterExpr(ExprPtr node);
  Result<ExprPtr> ParseSubscript(ExprPtr node);
  Result<ExprPtr> ParseSubscribed();
  Status ParseCallArgs(Expr* call);
  Result<ExprPtr> ParseCall(ExprPtr callee);
  Result<ExprPtr> ParseFilter(ExprPtr subject, bool start_inline);
  Result<ExprPtr> ParseTest(ExprPtr subject);
  bool IsTupleEnd(std::initializer_list<std::string_view> end_names) const;

  // Statements (parser_stmt.cc).
  Result<Body> Subparse(const std::vector<std::string_view>& end_names);
  Result<Body> ParseStatements(const std::vector<std::string_view>& end_names, bool drop_needle);
  Result<StmtPtr> ParseStatement();
  Result<StmtPtr> ParseFor(const Token& tag);
  Result<StmtPtr> ParseIf(const Token& tag);
  Result<StmtPtr> ParseSet(const Token& tag);
  Result<StmtPtr> ParseMacro(const Token& tag);
  Result<StmtPtr> ParseCallBlock(const Token& tag);
  Result<StmtPtr> ParseFilterBlock(const Token& tag);
  Result<StmtPtr> ParseWith(const Token& tag);
  Result<StmtPtr> ParsePrint(const Token& tag);
  Result<StmtPtr> ParseLoopControl(const Token& tag);
  Result<StmtPtr> ParseGeneration(const Token& tag);
  Result<AssignTarget> ParseAssignTarget(bool with_namespace,
                                         std::initializer_list<std::string_view> end_names);
  Status ParseSignature(MacroDef* macro);

  std::vector<Token> tokens_;
  size_t index_ = 0;
  ParseLimits limits_;
  int nesting_ = 0;
  int loop_depth_ = 0;  // for/else bodies we are in, for break and continue
  std::vector<std::vector<std::string_view>> end_stack_;  // for "looking for" error messages
};

// A new expression node at a token's position.
ExprPtr NewExpr(ExprKind kind, const SourcePos& pos);

}  // namespace mtplx::chat::internal
