// JSON Schema to grammar, for the subset agents and structured-output clients use:
//   type (object, array, string, number, integer, boolean, null, or a list of them), properties,
//   required, additionalProperties (false, true or a schema; absent counts as false: the output
//   then holds only declared keys, which every such schema accepts), enum, const, anyOf, oneOf,
//   allOf (of object schemas), $ref / $defs / definitions (recursive; "#" is the root), items,
//   prefixItems, minItems, maxItems, minLength (up to 10000), maxLength (up to 1000000), pattern
//   (the regex subset in regex.h), integer minimum / maximum / exclusiveMinimum /
//   exclusiveMaximum, number minimum or exclusiveMinimum 0 (no sign), format date, time,
//   date-time and uuid (others are plain strings). Annotations (title, description, default,
//   examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are ignored; any other
//   keyword is an error naming it and its path, as is a schema that can match nothing.
//
// Properties come in the schema's order, whitespace between tokens is one space or a newline and
// up to 20 spaces or tabs of indentation (a small model cannot pad forever), and numbers have at
// most 16 digits before and after the point.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace mtplx::grammar {

// GBNF rules for `schema` (JSON text); the value rule is `root_name`. Rule names are prefixed
// with `prefix` so several schemas can share one grammar.
Result<std::string> JsonSchemaToGbnf(std::string_view schema, const std::string& root_name = "root",
                                     const std::string& prefix = "");
Result<Grammar> CompileJsonSchema(std::string_view schema);

// Any JSON object (OpenAI's json_object mode).
std::string JsonObjectGbnf(const std::string& root_name = "root");

// How a tool-call value is written: `kJson` as a JSON value, `kRaw` as the text of a Qwen XML
// <parameter> (strings unquoted and unescaped, other types as JSON).
enum class ValueForm { kJson, kRaw };
Result<std::string> JsonSchemaToGbnfAs(std::string_view schema, ValueForm form,
                                       const std::string& root_name, const std::string& prefix);

// GBNF rules for `name`: any text without "</parameter>", the tag that ends a Qwen XML parameter
// (its rules are `name` and `name`-0 to -11). A value may hold any other markup, "</div>" too.
std::string RawTextRules(const std::string& name);

}  // namespace mtplx::grammar
