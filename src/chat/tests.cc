// Jinja's builtin tests (jinja2/tests.py): `x is defined`, `x is string`, `x is equalto y`, ...
#include "base/strings.h"
#include "chat/builtins_internal.h"
#include "chat/methods.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace internal {
namespace {

using Kind = Value::Kind;

Result<const Value*> OtherArg(const CallArgs& args, std::string_view test) {
  const Value* other = args.Get(0, "other");
  if (other == nullptr) return TypeError(StrCat("test '", test, "' needs an argument"));
  return other;
}

Result<bool> TestDefined(Interpreter&, const Value& v, const CallArgs&) {
  return !v.is_undefined();
}
Result<bool> TestUndefined(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_undefined();
}
Result<bool> TestNone(Interpreter&, const Value& v, const CallArgs&) { return v.is_none(); }
Result<bool> TestBoolean(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool(); }
Result<bool> TestTrue(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_bool() && v.AsBool();
}
Result<bool> TestFalse(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_bool() && !v.AsBool();
}
Result<bool> TestInteger(Interpreter&, const Value& v, const CallArgs&) { return v.is_int(); }
Result<bool> TestFloat(Interpreter&, const Value& v, const CallArgs&) { return v.is_float(); }
// Python's bool is a Number, so `true is number` holds.
Result<bool> TestNumber(Interpreter&, const Value& v, const CallArgs&) { return v.is_number(); }
Result<bool> TestString(Interpreter&, const Value& v, const CallArgs&) { return v.is_string(); }
Result<bool> TestMapping(Interpreter&, const Value& v, const CallArgs&) { return v.is_dict(); }
Result<bool> TestCallable(Interpreter&, const Value& v, const CallArgs&) { return v.is_function(); }
Result<bool> TestEscaped(Interpreter&, const Value&, const CallArgs&) { return false; }

// Jinja's sequence test asks for len() and __getitem__, which Undefined and dicts both have.
Result<bool> TestSequence(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}

Result<bool> TestIterable(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}

Result<bool> TestLower(Interpreter&, const Value& v, const CallArgs&) {
  CallArgs none;
  MTPLX_ASSIGN_OR_RETURN(const Value result,
                         FindStringMethod("islower")(Value::String(ToStr(v)), none));
  return result.AsBool();
}

Result<bool> TestUpper(Interpreter&, const Value& v, const CallArgs&) {
  CallArgs none;
  MTPLX_ASSIGN_OR_RETURN(const Value result,
                         FindStringMethod("isupper")(Value::String(ToStr(v)), none));
  return result.AsBool();
}

Result<bool> CompareTest(const Value& v, const CallArgs& args, CompareOp op,
                         std::string_view name) {
  MTPLX_ASSIGN_OR_RETURN(const Value* other, OtherArg(args, name));
  return EvalCompare(op, v, *other);
}

Result<bool> TestEq(Interpreter&, const Value& v, const CallArgs& a) {
  return CompareTest(v, a, CompareOp::kEq, "eq");
}
Result<bool> TestNe(Interpreter&, const Value& v, const CallArgs& a) {
  return CompareTest(v, a, CompareOp::kNe, "ne");
}
Result<bool> TestLt(Interpreter&, const Value& v, const CallArgs& a) {
  return CompareTest(v, a, CompareOp::kLt, "lt");
}
Result<bool> TestLe(Interpreter&, const Value& v, const CallArgs& a) {
  return CompareTest(v, a, CompareOp::kLe, "le");
}
Result<bool> TestGt(Interpreter&, const Value& v, const CallArgs& a) {
  return CompareTest(v, a, CompareOp::kGt, "gt");
}
Result<bool> TestGe(Interpreter&, const Value& v, const CallArgs& a) {
  return CompareTest(v, a, CompareOp::kGe, "ge");
}

Result<bool> TestIn(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* seq = args.Get(0, "seq");
  if (seq == nullptr) return TypeError("test 'in' needs an argument");
  return EvalCompare(CompareOp::kIn, v, *seq);
}

Result<bool> Remainder(Interpreter& in, const Value& v, const Value& divisor, int64_t want) {
  MTPLX_ASSIGN_OR_RETURN(const Value rest,
                         EvalBinary(BinaryOp::kMod, v, divisor, in.limits().max_output_bytes));
  return Equals(rest, Value::Int(want));
}

Result<bool> TestOdd(Interpreter& in, const Value& v, const CallArgs&) {
  return Remainder(in, v, Value::Int(2), 1);
}

Result<bool> TestEven(Interpreter& in, const Value& v, const CallArgs&) {
  return Remainder(in, v, Value::Int(2), 0);
}

Result<bool> TestDivisibleBy(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* num = args.Get(0, "num");
  if (num == nullptr) return TypeError("test 'divisibleby' needs an argument");
  return Remainder(in, v, *num, 0);
}

// `is sameas`: Python identity, which for None, booleans and small ints is value equality.
Result<bool> TestSameAs(Interpreter&, const Value& v, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const Value* other, OtherArg(args, "sameas"));
  if (v.kind() != other->kind()) return false;
  switch (v.kind()) {
    case Kind::kNone:
    case Kind::kUndefined:
      return true;
    case Kind::kBool:
      return v.AsBool() == other->AsBool();
    case Kind::kInt:
      return v.AsInt() == other->AsInt() && v.AsInt() >= -5 && v.AsInt() <= 256;
    default:
      return v.identity() != nullptr && v.identity() == other->identity();
  }
}

Result<bool> TestFilter(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() && FindFilter(v.text()) != nullptr;
}

Result<bool> TestTest(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() && FindTest(v.text()) != nullptr;
}

struct NamedTest {
  std::string_view name;
  TestFn fn;
};

constexpr NamedTest kTests[] = {
    {"!=", TestNe},
    {"<", TestLt},
    {"<=", TestLe},
    {"==", TestEq},
    {">", TestGt},
    {">=", TestGe},
    {"boolean", TestBoolean},
    {"callable", TestCallable},
    {"defined", TestDefined},
    {"divisibleby", TestDivisibleBy},
    {"eq", TestEq},
    {"equalto", TestEq},
    {"escaped", TestEscaped},
    {"even", TestEven},
    {"false", TestFalse},
    {"filter", TestFilter},
    {"float", TestFloat},
    {"ge", TestGe},
    {"greaterthan", TestGt},
    {"gt", TestGt},
    {"in", TestIn},
    {"integer", TestInteger},
    {"iterable", TestIterable},
    {"le", TestLe},
    {"lessthan", TestLt},
    {"lower", TestLower},
    {"lt", TestLt},
    {"mapping", TestMapping},
    {"ne", TestNe},
    {"none", TestNone},
    {"number", TestNumber},
    {"odd", TestOdd},
    {"sameas", TestSameAs},
    {"sequence", TestSequence},
    {"string", TestString},
    {"test", TestTest},
    {"true", TestTrue},
    {"undefined", TestUndefined},
    {"upper", TestUpper},
};

}  // namespace
}  // namespace internal

TestFn FindTest(std::string_view name) {
  for (const internal::NamedTest& test : internal::kTests) {
    if (test.name == name) return test.fn;
  }
  return nullptr;
}

}  // namespace mtplx::chat
