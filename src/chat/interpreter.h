// Tree-walking interpreter for parsed templates, with Jinja2's scoping: a for-loop iteration and
// a macro call each get a fresh scope (so `set` inside them does not leak out, which is why
// templates use namespace()), while if-blocks share their enclosing scope. Macros see the scope
// they were defined in as it is when they are called.
//
// Every run is bounded: a step budget stops infinite loops, a call-depth limit stops runaway
// recursion, and a size limit caps output and intermediate strings and lists.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/value.h"

namespace mtplx::chat {

struct RenderLimits {
  int64_t max_steps = 20'000'000;  // statements and expressions evaluated
  int max_call_depth = 100;        // nested macro calls
  // Statements and expressions being evaluated inside one another, macro bodies included; bounds
  // the interpreter's stack use (a recursive macro over deeply nested expressions).
  int max_depth = 600;
  size_t max_output_bytes = size_t{64} << 20;  // output, and any single string or list
};

// A set of variables with a parent to fall back to.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* Find(std::string_view name) const;
  void Set(std::string_view name, Value value);

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with the entries of `context` (a dict) as template variables, on top of the
  // builtin globals (range, dict, namespace, raise_exception, strftime_now).
  Result<MarkedString> Render(const Body& body, const Value& context);

  // Services for builtins.
  Result<Value> Call(const Value& callee, const CallArgs& args);
  Result<Value> ApplyFilter(std::string_view name, const Value& subject, const CallArgs& args);
  Result<bool> ApplyTest(std::string_view name, const Value& subject, const CallArgs& args);
  Result<Value> CallMacro(const MacroDef& macro, const ScopePtr& closure, const CallArgs& args);
  // A new namespace, tracked so that cycles through it are broken when the render ends.
  Value NewNamespace(std::shared_ptr<DictData> data);
  const RenderLimits& limits() const { return limits_; }
  // Charges work done inside a builtin (comparisons in |unique) to the step budget.
  Status CountSteps(int64_t steps);
  Status CheckSize(size_t size) const;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> ExecBody(const Body& body, const ScopePtr& scope, MarkedString* out);
  Result<Flow> Exec(const Stmt& stmt, const ScopePtr& scope, MarkedString* out);
  Result<Flow> ExecStmt(const Stmt& stmt, const ScopePtr& scope, MarkedString* out);
  Result<Flow> ExecIf(const Stmt& stmt, const ScopePtr& scope, MarkedString* out);
  Result<Flow> ExecFor(const Stmt& stmt, const ScopePtr& scope, MarkedString* out);
  Status ExecCallBlock(const Stmt& stmt, const ScopePtr& scope, MarkedString* out);
  Status ExecWith(const Stmt& stmt, const ScopePtr& scope, MarkedString* out);
  Status Assign(const AssignTarget& target, const Value& value, Scope* scope);
  Status Emit(const MarkedString& text, MarkedString* out) const;

  Result<Value> Eval(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalExpr(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalFilterOrTest(const Expr& expr, const ScopePtr& scope);
  // and, or and the inline if-expression.
  Result<Value> EvalConditional(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalItems(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalDict(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalGetItem(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalCompare(const Expr& expr, const ScopePtr& scope);
  Result<Value> EvalConcat(const Expr& expr, const ScopePtr& scope);
  // Evaluates operands[first...], kwargs and *args/**kwargs of a call, filter or test node.
  Result<CallArgs> EvalArgs(const Expr& expr, size_t first, const ScopePtr& scope);
  Result<Value> EvalCall(const Expr& expr, const ScopePtr& scope, const Value* caller);
  // A filter chain whose innermost subject is `block` (filter blocks, `set x | f`).
  Result<Value> EvalFilterChain(const Expr& expr, const ScopePtr& scope, const Value& block);
  Value MakeLoop(const std::vector<Value>& items, size_t index) const;

  Status Step();
  Status CheckDepth() const;
  // Prefixes "chat template: LINE:COLUMN: " to the first error, at the innermost node.
  Status Locate(Status status, const SourcePos& pos);

  RenderLimits limits_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  int depth_ = 0;  // nesting of Exec and Eval
  bool located_ = false;
  ScopePtr globals_;
  std::vector<std::weak_ptr<DictData>> namespaces_;
};

}  // namespace mtplx::chat
