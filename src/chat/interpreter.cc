#include "chat/interpreter.h"

#include <algorithm>

#include "base/strings.h"
#include "chat/builtins.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace {

// A macro, or the body of a {% call %} block bound as `caller`.
class MacroFunction : public Function {
 public:
  // The closure is weak: the defining scope holds this function, and a strong reference back
  // would keep both alive forever. A macro that outlives its scope sees only the globals.
  MacroFunction(const MacroDef* macro, std::weak_ptr<Scope> closure)
      : macro_(macro), closure_(std::move(closure)) {}
  std::string_view name() const override { return macro_->name; }
  Result<Value> Call(Interpreter& interpreter, const CallArgs& args) const override {
    return interpreter.CallMacro(*macro_, closure_.lock(), args);
  }

 private:
  const MacroDef* macro_;
  std::weak_ptr<Scope> closure_;
};

// loop.cycle('odd', 'even').
class CycleFunction : public Function {
 public:
  explicit CycleFunction(size_t index) : index_(index) {}
  std::string_view name() const override { return "cycle"; }
  Result<Value> Call(Interpreter&, const CallArgs& args) const override {
    if (args.positional.empty()) {
      return InvalidArgument("TypeError: no items for cycling given");
    }
    return args.positional[index_ % args.positional.size()];
  }

 private:
  size_t index_;
};

// Keeps the call depth counted while a macro runs.
class DepthCounter {
 public:
  explicit DepthCounter(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthCounter() { --*depth_; }
  DepthCounter(const DepthCounter&) = delete;
  DepthCounter& operator=(const DepthCounter&) = delete;

 private:
  int* depth_;
};

}  // namespace

const Value* Scope::Find(std::string_view name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent_.get()) {
    for (const auto& [key, value] : scope->vars_) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::Set(std::string_view name, Value value) {
  for (auto& [key, existing] : vars_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(value));
}

Interpreter::~Interpreter() {
  // A namespace can hold itself ({% set ns.me = ns %}); clearing them all breaks such cycles.
  for (const auto& weak : namespaces_) {
    if (auto data = weak.lock()) data->entries.clear();
  }
}

Result<MarkedString> Interpreter::Render(const Body& body, const Value& context) {
  globals_ = std::make_shared<Scope>(nullptr);
  for (auto& [name, value] : BuiltinGlobals()) globals_->Set(name, std::move(value));
  auto variables = std::make_shared<Scope>(globals_);
  if (context.is_dict()) {
    for (const auto& [key, value] : context.AsDict().entries) variables->Set(key.text(), value);
  }
  auto top = std::make_shared<Scope>(variables);
  MarkedString out;
  MTPLX_ASSIGN_OR_RETURN(const Flow flow, ExecBody(body, top, &out));
  (void)flow;
  return out;
}

Value Interpreter::NewNamespace(std::shared_ptr<DictData> data) {
  namespaces_.push_back(data);
  return Value::Namespace(std::move(data));
}

Status Interpreter::CheckSize(size_t size) const {
  if (size > limits_.max_output_bytes) {
    return ResourceExhausted(StrCat("result is larger than the render size limit (",
                                    limits_.max_output_bytes, " bytes)"));
  }
  return Status::Ok();
}

Status Interpreter::Step() {
  if (++steps_ > limits_.max_steps) {
    return ResourceExhausted(
        StrCat("render exceeded the step limit of ", limits_.max_steps, " (an endless loop?)"));
  }
  return Status::Ok();
}

Status Interpreter::CheckDepth() const {
  if (depth_ > limits_.max_depth) {
    return ResourceExhausted(
        StrCat("template evaluation is nested deeper than ", limits_.max_depth));
  }
  return Status::Ok();
}

Status Interpreter::CountSteps(int64_t steps) {
  steps_ += steps;
  return Step();
}

Status Interpreter::Locate(Status status, const SourcePos& pos) {
  if (status.ok() || located_) return status;
  located_ = true;
  return Status(status.code(), StrCat("chat template: ", FormatPos(pos), ": ", status.message()));
}

Status Interpreter::Emit(const MarkedString& text, MarkedString* out) const {
  MTPLX_RETURN_IF_ERROR(CheckSize(out->size() + text.size()));
  out->Append(text);
  return Status::Ok();
}

Result<Interpreter::Flow> Interpreter::ExecBody(const Body& body, const ScopePtr& scope,
                                                MarkedString* out) {
  for (const StmtPtr& stmt : body) {
    MTPLX_ASSIGN_OR_RETURN(const Flow flow, Exec(*stmt, scope, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::Exec(const Stmt& stmt, const ScopePtr& scope,
                                            MarkedString* out) {
  DepthCounter depth(&depth_);
  Result<Flow> flow = depth_ > limits_.max_depth ? CheckDepth() : ExecStmt(stmt, scope, out);
  if (!flow.ok()) return Locate(flow.status(), stmt.pos);
  return flow;
}

Result<Interpreter::Flow> Interpreter::ExecStmt(const Stmt& stmt, const ScopePtr& scope,
                                                MarkedString* out) {
  MTPLX_RETURN_IF_ERROR(Step());
  switch (stmt.kind) {
    case StmtKind::kText:
      MTPLX_RETURN_IF_ERROR(CheckSize(out->size() + stmt.text.size()));
      out->Append(stmt.text);
      return Flow::kNormal;
    case StmtKind::kPrint: {
      MTPLX_ASSIGN_OR_RETURN(const Value value, Eval(*stmt.expr, scope));
      MTPLX_RETURN_IF_ERROR(Emit(ToStr(value), out));
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      return ExecIf(stmt, scope, out);
    case StmtKind::kFor:
      return ExecFor(stmt, scope, out);
    case StmtKind::kSet: {
      MTPLX_ASSIGN_OR_RETURN(const Value value, Eval(*stmt.expr, scope));
      MTPLX_RETURN_IF_ERROR(Assign(stmt.target, value, scope.get()));
      return Flow::kNormal;
    }
    case StmtKind::kSetBlock:
    case StmtKind::kFilterBlock: {
      MarkedString block;
      MTPLX_RETURN_IF_ERROR(ExecBody(stmt.body, std::make_shared<Scope>(scope), &block).status());
      Value value = Value::String(std::move(block));
      if (stmt.expr) {
        MTPLX_ASSIGN_OR_RETURN(value, EvalFilterChain(*stmt.expr, scope, value));
      }
      if (stmt.kind == StmtKind::kFilterBlock) MTPLX_RETURN_IF_ERROR(Emit(ToStr(value), out));
      if (stmt.kind == StmtKind::kSetBlock) {
        MTPLX_RETURN_IF_ERROR(Assign(stmt.target, value, scope.get()));
      }
      return Flow::kNormal;
    }
    case StmtKind::kMacro:
      scope->Set(stmt.macro->name,
                 Value::Func(std::make_shared<MacroFunction>(stmt.macro.get(), scope)));
      return Flow::kNormal;
    case StmtKind::kCallBlock:
      MTPLX_RETURN_IF_ERROR(ExecCallBlock(stmt, scope, out));
      return Flow::kNormal;
    case StmtKind::kWith:
      MTPLX_RETURN_IF_ERROR(ExecWith(stmt, scope, out));
      return Flow::kNormal;
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kScope:
      return ExecBody(stmt.body, scope, out);
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::ExecIf(const Stmt& stmt, const ScopePtr& scope,
                                              MarkedString* out) {
  for (const auto& [test, body] : stmt.branches) {
    MTPLX_ASSIGN_OR_RETURN(const Value condition, Eval(*test, scope));
    if (condition.Truthy()) return ExecBody(body, scope, out);
  }
  return ExecBody(stmt.else_body, scope, out);
}

Value Interpreter::MakeLoop(const std::vector<Value>& items, size_t index) const {
  // Built for every iteration, so it avoids Value::Dict's duplicate-key scan; the keys are short
  // enough to stay in std::string's inline buffer.
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t i = static_cast<int64_t>(index);
  auto data = std::make_shared<DictData>();
  auto& entries = data->entries;
  entries.reserve(12);
  entries.emplace_back(MarkedString("index"), Value::Int(i + 1));
  entries.emplace_back(MarkedString("index0"), Value::Int(i));
  entries.emplace_back(MarkedString("revindex"), Value::Int(n - i));
  entries.emplace_back(MarkedString("revindex0"), Value::Int(n - i - 1));
  entries.emplace_back(MarkedString("first"), Value::Bool(i == 0));
  entries.emplace_back(MarkedString("last"), Value::Bool(i == n - 1));
  entries.emplace_back(MarkedString("length"), Value::Int(n));
  entries.emplace_back(MarkedString("depth"), Value::Int(1));
  entries.emplace_back(MarkedString("depth0"), Value::Int(0));
  entries.emplace_back(MarkedString("cycle"), Value::Func(std::make_shared<CycleFunction>(index)));
  entries.emplace_back(MarkedString("previtem"),
                       i > 0 ? items[index - 1] : Value::Undefined("there is no previous item"));
  entries.emplace_back(MarkedString("nextitem"),
                       i + 1 < n ? items[index + 1] : Value::Undefined("there is no next item"));
  return Value::Dict(std::move(data));
}

Result<Interpreter::Flow> Interpreter::ExecFor(const Stmt& stmt, const ScopePtr& scope,
                                               MarkedString* out) {
  MTPLX_ASSIGN_OR_RETURN(const Value iterable, Eval(*stmt.expr, scope));
  MTPLX_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(iterable));
  if (stmt.condition) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto filter_scope = std::make_shared<Scope>(scope);
      MTPLX_RETURN_IF_ERROR(Assign(stmt.target, item, filter_scope.get()));
      MTPLX_ASSIGN_OR_RETURN(const Value keep, Eval(*stmt.condition, filter_scope));
      if (keep.Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return ExecBody(stmt.else_body, std::make_shared<Scope>(scope), out);
  for (size_t i = 0; i < items.size(); ++i) {
    MTPLX_RETURN_IF_ERROR(Step());
    auto iteration = std::make_shared<Scope>(scope);
    MTPLX_RETURN_IF_ERROR(Assign(stmt.target, items[i], iteration.get()));
    iteration->Set("loop", MakeLoop(items, i));
    MTPLX_ASSIGN_OR_RETURN(const Flow flow, ExecBody(stmt.body, iteration, out));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Status Interpreter::ExecCallBlock(const Stmt& stmt, const ScopePtr& scope, MarkedString* out) {
  const Value caller = Value::Func(std::make_shared<MacroFunction>(stmt.macro.get(), scope));
  MTPLX_ASSIGN_OR_RETURN(const Value result, EvalCall(*stmt.expr, scope, &caller));
  return Emit(ToStr(result), out);
}

Status Interpreter::ExecWith(const Stmt& stmt, const ScopePtr& scope, MarkedString* out) {
  auto inner = std::make_shared<Scope>(scope);
  for (size_t i = 0; i < stmt.with_names.size(); ++i) {
    MTPLX_ASSIGN_OR_RETURN(Value value, Eval(*stmt.with_values[i], scope));
    inner->Set(stmt.with_names[i], std::move(value));
  }
  return ExecBody(stmt.body, inner, out).status();
}

Status Interpreter::Assign(const AssignTarget& target, const Value& value, Scope* scope) {
  switch (target.kind) {
    case AssignTarget::Kind::kName:
      scope->Set(target.names[0], value);
      return Status::Ok();
    case AssignTarget::Kind::kTuple: {
      MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> parts, Iterate(value));
      if (parts.size() != target.names.size()) {
        return InvalidArgument(StrCat(
            "ValueError: ", parts.size() > target.names.size() ? "too many" : "not enough",
            " values to unpack (expected ", target.names.size(), ", got ", parts.size(), ")"));
      }
      for (size_t i = 0; i < parts.size(); ++i) scope->Set(target.names[i], parts[i]);
      return Status::Ok();
    }
    case AssignTarget::Kind::kNamespaceAttr: {
      const Value* ns = scope->Find(target.names[0]);
      if (ns == nullptr || !ns->is_namespace()) {
        return InvalidArgument("cannot assign attribute on non-namespace object");
      }
      if (StartsWith(target.attr, "_")) {
        return InvalidArgument(
            StrCat("SecurityError: Chat templates cannot store "
                   "underscore-prefixed attributes on a namespace, but got '",
                   target.attr, "'. Please rename the attribute."));
      }
      ns->AsNamespace().Set(MarkedString(target.attr), value);
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Result<Value> Interpreter::Call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) return UndefinedError(callee);
  if (!callee.is_function()) {
    return InvalidArgument(StrCat("TypeError: '", TypeName(callee), "' object is not callable"));
  }
  MTPLX_RETURN_IF_ERROR(Step());
  return callee.AsFunction().Call(*this, args);
}

Result<Value> Interpreter::ApplyFilter(std::string_view name, const Value& subject,
                                       const CallArgs& args) {
  const FilterFn filter = FindFilter(name);
  if (filter == nullptr) return InvalidArgument(StrCat("No filter named '", name, "'."));
  MTPLX_RETURN_IF_ERROR(Step());
  return filter(*this, subject, args);
}

Result<bool> Interpreter::ApplyTest(std::string_view name, const Value& subject,
                                    const CallArgs& args) {
  const TestFn test = FindTest(name);
  if (test == nullptr) return InvalidArgument(StrCat("No test named '", name, "'."));
  MTPLX_RETURN_IF_ERROR(Step());
  return test(*this, subject, args);
}

Result<Value> Interpreter::CallMacro(const MacroDef& macro, const ScopePtr& closure,
                                     const CallArgs& args) {
  DepthCounter depth(&call_depth_);
  if (call_depth_ > limits_.max_call_depth) {
    return ResourceExhausted(StrCat("macro calls are nested deeper than ", limits_.max_call_depth));
  }
  auto scope = std::make_shared<Scope>(closure ? closure : globals_);
  const size_t first_default = macro.params.size() - macro.defaults.size();
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const std::string& param = macro.params[i];
    const Value* given = args.Get(i, param);
    if (given != nullptr) {
      scope->Set(param, *given);
    } else if (i >= first_default) {
      MTPLX_ASSIGN_OR_RETURN(Value fallback, Eval(*macro.defaults[i - first_default], scope));
      scope->Set(param, std::move(fallback));
    } else {
      scope->Set(param, Value::Undefined(StrCat("parameter '", param, "' was not provided")));
    }
  }
  std::vector<Value> varargs;
  for (size_t i = macro.params.size(); i < args.positional.size(); ++i) {
    varargs.push_back(args.positional[i]);
  }
  std::vector<std::pair<MarkedString, Value>> kwargs;
  for (const auto& [key, value] : args.keyword) {
    if (key == "caller") {
      scope->Set("caller", value);
    } else if (std::find(macro.params.begin(), macro.params.end(), key) == macro.params.end()) {
      kwargs.emplace_back(MarkedString(key), value);
    }
  }
  scope->Set("varargs", Value::Tuple(std::move(varargs)));
  scope->Set("kwargs", Value::Dict(std::move(kwargs)));
  MarkedString out;
  MTPLX_RETURN_IF_ERROR(ExecBody(macro.body, scope, &out).status());
  return Value::String(std::move(out));
}

}  // namespace mtplx::chat
