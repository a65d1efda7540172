#include "api/structured.h"

#include <algorithm>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace mtplx::api {
namespace {

using Json = nlohmann::json;
using Ordered = nlohmann::ordered_json;

// The request body again, keys in the order the client wrote them.
Ordered OrderedBody(std::string_view raw_body) {
  Ordered parsed = Ordered::parse(raw_body, nullptr, false);
  return parsed.is_discarded() ? Ordered::object() : parsed;
}

// The input schema of tool `name` in either API's shape ({} when it declares none).
Ordered ToolSchema(const Ordered& body, const std::string& name) {
  if (!body.contains("tools") || !body["tools"].is_array()) return Ordered::object();
  for (const Ordered& tool : body["tools"]) {
    if (!tool.is_object()) continue;
    if (tool.contains("function") && tool["function"].is_object() &&
        tool["function"].value("name", "") == name)
      return tool["function"].value("parameters", Ordered::object());
    if (tool.value("name", "") == name) return tool.value("input_schema", Ordered::object());
  }
  return Ordered::object();
}

ApiError GrammarError(const Status& status, const std::string& param) {
  return InvalidRequest(status.message(), param, "invalid_schema");
}

// GBNF rule tN-call for one Qwen XML call after "<function=": [NAME ">\n"] parameters
// "</function>\n</tool_call>" (the name is left out when the prompt already holds it).
Result<std::string> XmlCall(const std::string& name, bool with_name, const Ordered& schema,
                            int index) {
  const std::string p = "t" + std::to_string(index) + "-";
  std::string rules;
  std::string body;
  const Ordered props = schema.value("properties", Ordered::object());
  if (!props.is_object() || props.empty()) {
    // No declared parameters: any parameters, as text.
    body = "(\"<parameter=\" [a-zA-Z0-9_.-]+ \">\\n\" " + p + "raw \"\\n</parameter>\\n\")*";
    rules += grammar::RawTextRules(p + "raw");
  } else {
    std::vector<std::string> required;
    if (schema.contains("required") && schema["required"].is_array())
      for (const Ordered& r : schema["required"])
        if (r.is_string()) required.push_back(r.get<std::string>());
    // Parameters in the schema's order; required ones must come, optional ones may.
    int k = 0;
    for (const auto& [key, value] : props.items()) {
      const std::string rule = p + "v" + std::to_string(k++);
      MTPLX_ASSIGN_OR_RETURN(
          std::string gbnf,
          grammar::JsonSchemaToGbnfAs(value.dump(), grammar::ValueForm::kRaw, rule, rule + "-"));
      rules += gbnf;
      const std::string one = grammar::GbnfLiteral("<parameter=" + key + ">\n") + " " + rule + " " +
                              grammar::GbnfLiteral("\n</parameter>\n");
      const bool req = std::find(required.begin(), required.end(), key) != required.end();
      body += req ? " " + one : " (" + one + ")?";
    }
  }
  const std::string head = with_name ? grammar::GbnfLiteral(name + ">\n") : "\"\"";
  rules += p + "call ::= " + head + body + " " + grammar::GbnfLiteral("</function>\n</tool_call>") +
           "\n";
  return rules;
}

// GBNF for one hermes call's arguments and closing markup: ARGS "}\n</tool_call>".
Result<std::string> HermesArguments(const Ordered& schema, int index) {
  const std::string p = "t" + std::to_string(index) + "-";
  MTPLX_ASSIGN_OR_RETURN(std::string gbnf, grammar::JsonSchemaToGbnf(schema.dump(), p + "args", p));
  return gbnf + p + "call ::= " + p + "args " + grammar::GbnfLiteral("}\n</tool_call>") + "\n";
}

MaybeError ToolCallGrammar(const Ordered& body, const ServeDefaults& defaults, ChatCall& call) {
  const bool named =
      call.tool_choice.mode == ToolChoice::Mode::kNamed || !call.tool_choice.name.empty();
  std::vector<std::string> names;
  if (named) {
    names.push_back(call.tool_choice.name);
  } else {
    for (const Json& tool : call.tools) names.push_back(ToolName(tool));
  }
  const bool hermes = defaults.tool_dialect == "hermes";
  std::vector<std::string> all;
  for (const Json& tool : call.tools) all.push_back(ToolName(tool));
  // Rules tN-call for the forced call (index 0..) and, when calls may follow it, for every
  // declared tool (index 100..), whose later calls name themselves.
  std::string rules, first = "(", more = "(";
  for (size_t i = 0; i < names.size(); ++i) {
    const int index = static_cast<int>(i);
    const Ordered schema = ToolSchema(body, names[i]);
    Result<std::string> gbnf =
        hermes ? HermesArguments(schema, index) : XmlCall(names[i], !named, schema, index);
    if (!gbnf.ok()) return GrammarError(gbnf.status(), "tools");
    rules += *gbnf;
    std::string call_rule = "t" + std::to_string(i) + "-call";
    // A "required" hermes call chooses its name after the prefix's {"name": ".
    if (!named && hermes)
      call_rule = grammar::GbnfLiteral(names[i] + "\", \"arguments\": ") + " " + call_rule;
    first += (i ? " | " : "") + call_rule;
  }
  first += ")";
  if (call.tool_choice.parallel) {
    for (size_t i = 0; i < all.size(); ++i) {
      const int index = 100 + static_cast<int>(i);
      const Ordered schema = ToolSchema(body, all[i]);
      Result<std::string> gbnf =
          hermes ? HermesArguments(schema, index) : XmlCall(all[i], true, schema, index);
      if (!gbnf.ok()) return GrammarError(gbnf.status(), "tools");
      rules += *gbnf;
      const std::string opening =
          hermes ? "\n<tool_call>\n{\"name\": \"" + all[i] + "\", \"arguments\": "
                 : "\n<tool_call>\n<function=";
      more +=
          (i ? " | " : "") + grammar::GbnfLiteral(opening) + " t" + std::to_string(index) + "-call";
    }
    more += ")";
  }
  const std::string root =
      "root ::= " + first + (call.tool_choice.parallel ? " " + more + "*" : std::string());
  auto g = grammar::ParseGbnf(root + "\n" + rules);
  if (!g.ok()) return GrammarError(g.status(), "tools");
  call.request.grammar = std::make_shared<const grammar::Grammar>(std::move(*g));
  return std::nullopt;
}

}  // namespace

MaybeError CheckResponseFormat(const FieldReader& f) {
  const Json* format = nullptr;
  MTPLX_API_TRY(f.Object("response_format", format));
  if (!format) return std::nullopt;
  const std::string type = format->value("type", "");
  if (type == "text" || type == "json_object") return std::nullopt;
  if (type == "json_schema") {
    const auto it = format->find("json_schema");
    if (it == format->end() || !it->is_object())
      return InvalidRequest("'response_format.json_schema' must be an object",
                            "response_format.json_schema");
    const auto schema = it->find("schema");
    if (schema != it->end() && !schema->is_object() && !schema->is_boolean())
      return InvalidRequest("'response_format.json_schema.schema' must be a JSON schema object",
                            "response_format.json_schema.schema");
    return std::nullopt;
  }
  return InvalidRequest(
      "'response_format.type' must be \"text\", \"json_object\" or "
      "\"json_schema\"",
      "response_format.type", "unsupported_response_format");
}

MaybeError ApplyStructuredOutput(const Json& body, std::string_view raw_body,
                                 const ServeDefaults& defaults, const std::string& prefix,
                                 ChatCall& call) {
  if (!prefix.empty()) return ToolCallGrammar(OrderedBody(raw_body), defaults, call);
  std::string gbnf, param;
  const auto format = body.find("response_format");
  const std::string type =
      format != body.end() && format->is_object() ? format->value("type", "") : std::string();
  if (type == "json_object") {
    gbnf = grammar::JsonObjectGbnf();
    param = "response_format";
  } else if (type == "json_schema") {
    const Ordered ordered = OrderedBody(raw_body);
    Ordered schema = Ordered::object();
    const auto rf = ordered.find("response_format");
    if (rf != ordered.end() && rf->is_object()) {
      const auto js = rf->find("json_schema");
      if (js != rf->end() && js->is_object()) schema = js->value("schema", Ordered::object());
    }
    param = "response_format.json_schema.schema";
    auto converted = grammar::JsonSchemaToGbnf(schema.dump());
    if (!converted.ok()) return GrammarError(converted.status(), param);
    gbnf = *converted;
  }
  const auto text = body.find("grammar");
  if (text != body.end() && !text->is_null()) {
    if (!gbnf.empty())
      return InvalidRequest("'grammar' and a JSON 'response_format' cannot both be set", "grammar");
    if (!text->is_string()) return InvalidRequest("'grammar' must be a GBNF string", "grammar");
    gbnf = text->get<std::string>();
    param = "grammar";
  }
  if (gbnf.empty()) return std::nullopt;
  auto g = grammar::ParseGbnf(gbnf);
  if (!g.ok()) return InvalidRequest(g.status().message(), param, "invalid_grammar");
  call.request.grammar = std::make_shared<const grammar::Grammar>(std::move(*g));
  call.request.render.enable_thinking = false;
  return std::nullopt;
}

}  // namespace mtplx::api
