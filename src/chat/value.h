// Value: the runtime data of the template engine, modelled on the Python objects that Jinja2
// templates see (transformers renders chat templates with Python's jinja2, and our output must
// match it byte for byte).
//
// Strings are MarkedStrings so that user input stays marked through the render. Lists, tuples and
// dicts are immutable once built (the sandbox that transformers uses forbids mutating them), so
// copies share storage. Namespaces are the one mutable kind: `{% set ns.x = 1 %}` must be seen by
// every holder of the namespace.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"
#include "chat/marked_string.h"

namespace mtplx::chat {

class Interpreter;
class Function;
struct ListData;
struct DictData;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // also tuples (ListData::is_tuple)
    kDict,
    kNamespace,
    kFunction,
  };

  Value() = default;  // undefined, no hint
  static Value Undefined(std::string hint = {});
  static Value None();
  static Value Bool(bool value);
  static Value Int(int64_t value);
  static Value Float(double value);
  static Value String(std::string text, bool from_user = false);
  static Value String(MarkedString text);
  static Value List(std::vector<Value> items);
  static Value Tuple(std::vector<Value> items);
  // Keys must be unique; later duplicates are dropped.
  static Value Dict(std::vector<std::pair<MarkedString, Value>> entries);
  static Value Dict(std::shared_ptr<const DictData> data);
  static Value Namespace(std::shared_ptr<DictData> data);
  static Value Func(std::shared_ptr<const Function> function);

  Kind kind() const { return static_cast<Kind>(storage_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_function() const { return kind() == Kind::kFunction; }
  // int, float or bool (Python's bool is an int).
  bool is_number() const { return is_int() || is_float() || is_bool(); }

  bool AsBool() const { return std::get<bool>(storage_); }
  int64_t AsInt() const;    // bool converts to 0/1
  double AsDouble() const;  // any number
  const MarkedString& AsString() const { return *std::get<StringPtr>(storage_); }
  const std::string& text() const { return AsString().text(); }
  const ListData& AsList() const { return *std::get<ListPtr>(storage_); }
  const std::vector<Value>& items() const;
  const DictData& AsDict() const { return *std::get<DictPtr>(storage_); }
  DictData& AsNamespace() const { return *std::get<NamespacePtr>(storage_); }
  const Function& AsFunction() const { return *std::get<FunctionPtr>(storage_); }
  // Why a value is undefined ("'x' is undefined"), used when it is misused.
  std::string UndefinedMessage() const;

  // Python truthiness.
  bool Truthy() const;
  // Whether any string inside (recursively, keys included) came from the user.
  bool ContainsUserText() const;
  // Identity of shared storage (namespaces compare by identity, like Python objects).
  const void* identity() const;

 private:
  struct UndefinedInfo {
    std::shared_ptr<const std::string> hint;
  };
  using StringPtr = std::shared_ptr<const MarkedString>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using NamespacePtr = std::shared_ptr<DictData>;
  using FunctionPtr = std::shared_ptr<const Function>;
  // The order matches Kind.
  using Storage = std::variant<UndefinedInfo, std::nullptr_t, bool, int64_t, double, StringPtr,
                               ListPtr, DictPtr, NamespacePtr, FunctionPtr>;

  explicit Value(Storage storage) : storage_(std::move(storage)) {}

  Storage storage_;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
};

// An insertion-ordered map with string keys (Python dicts keep insertion order, and tojson and
// `|items` must see keys in the order the JSON had them).
struct DictData {
  std::vector<std::pair<MarkedString, Value>> entries;

  const Value* Find(std::string_view key) const;
  void Set(MarkedString key, Value value);
};

// Dict keys are strings in practice, but Python also allows None, bool, int and float keys
// ({0: 'a'}). Those are stored under an encoded key that starts with a byte (0xFF) valid UTF-8
// never contains. EncodeDictKey returns nullopt for unhashable keys (lists, dicts).
std::optional<MarkedString> EncodeDictKey(const Value& key);
// The key as a value: a string, or the None/int/float an encoded key stands for.
Value DecodeDictKey(const MarkedString& key);

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index`, else the keyword `name`, else nullptr.
  const Value* Get(size_t index, std::string_view name) const;
  const Value* Keyword(std::string_view name) const;
};

// Something callable from a template: a macro, a builtin global or a bound method.
class Function {
 public:
  virtual ~Function() = default;
  virtual std::string_view name() const = 0;
  virtual Result<Value> Call(Interpreter& interpreter, const CallArgs& args) const = 0;
};

}  // namespace mtplx::chat
