#!/usr/bin/env python3
"""Writes tests/data/grammar/schemas.json: the JSON Schemas the structured-output tests run
(tests/grammar/json_schema_test.cc compiles every one; tests/clients/structured_test.py asks the
server for a document of each and validates it with PyPI `jsonschema`).

Hand-written schemas cover every supported keyword (recursive $ref included); the input schemas of
the tools in the shared Claude Code request follow; seeded random combinations fill up to 120.
Strings carry a maxLength in the random ones so the bundled 10 M model can finish its documents.

Usage: python3 tools/make_schema_corpus.py [OUT]
"""
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

HAND = [
    {"type": "string", "maxLength": 12},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": ["integer", "null"]},
    {"enum": ["red", "green", "blue"]},
    {"enum": [1, "two", None, True]},
    {"const": "fixed"},
    {"type": "integer", "minimum": 1, "maximum": 12},
    {"type": "integer", "exclusiveMinimum": 0, "maximum": 1000},
    {"type": "integer", "minimum": -40, "maximum": 40},
    {"type": "number", "minimum": 0},
    {"type": "string", "minLength": 3, "maxLength": 8},
    {"type": "string", "pattern": "^[a-z]{2,6}-[0-9]{2}$"},
    {"type": "string", "pattern": "^wf_[a-z0-9-]{6,10}$"},
    {"type": "string", "pattern": "^(cat|dog|bird)s?$"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "time"},
    {"type": "string", "format": "uuid"},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 4},
    {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string", "maxLength": 6}, {"type": "integer"}],
     "items": False},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
     "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": None},
    {"type": "object", "properties": {"kind": {"const": "point"},
                                      "x": {"type": "number"}, "y": {"type": "number"}},
     "required": ["kind", "x", "y"]},
    {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 5}]},
    {"oneOf": [{"type": "object", "properties": {"ok": {"const": True}}, "required": ["ok"],
                "additionalProperties": False},
               {"type": "object", "properties": {"error": {"type": "string", "maxLength": 20}},
                "required": ["error"], "additionalProperties": False}]},
    {"allOf": [{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
               {"properties": {"tag": {"enum": ["x", "y"]}}, "required": ["tag"]}]},
    {"allOf": [{"type": "object", "properties": {"id": {"type": "integer"},
                                                 "note": {"type": "string", "maxLength": 8}},
                "required": ["id"], "additionalProperties": False},
               {"properties": {"id": {"minimum": 0, "maximum": 99}}}]},
    {"$defs": {"node": {"type": "object",
                        "properties": {"value": {"type": "integer", "minimum": 0, "maximum": 9},
                                       "next": {"anyOf": [{"$ref": "#/$defs/node"},
                                                          {"type": "null"}]}},
                        "required": ["value", "next"], "additionalProperties": False}},
     "$ref": "#/$defs/node"},
    {"definitions": {"leaf": {"type": "string", "maxLength": 6}},
     "type": "object", "properties": {"left": {"$ref": "#/definitions/leaf"},
                                      "right": {"$ref": "#/definitions/leaf"}},
     "required": ["left"], "additionalProperties": False},
    {"type": "object", "title": "Annotated", "description": "annotations are ignored",
     "properties": {"v": {"type": "integer", "default": 3, "examples": [1, 2]}},
     "required": ["v"], "additionalProperties": False, "$schema":
     "https://json-schema.org/draft/2020-12/schema"},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                               "maxItems": 3},
                                      "meta": {"type": "object", "properties": {
                                          "created": {"type": "string", "format": "date"}},
                                          "required": ["created"],
                                          "additionalProperties": False}},
     "required": ["tags", "meta"], "additionalProperties": False},
]
HAND = [{k: v for k, v in s.items() if v is not None} for s in HAND]


def claude_code_tools():
    fixture = ROOT / "tests" / "data" / "clients" / "claude-code" / "2.1.328-plain-prompt.json"
    request = json.loads(fixture.read_text())
    body = request.get("body", request)
    return [tool["input_schema"] for tool in body["tools"]]


def random_schema(rng, depth=0):
    kinds = ["string", "integer", "number", "boolean", "enum", "array", "object", "nullable"]
    if depth >= 2:
        kinds = kinds[:5]
    kind = rng.choice(kinds)
    if kind == "string":
        s = {"type": "string", "maxLength": rng.randint(1, 12)}
        if rng.random() < 0.3:
            s["minLength"] = rng.randint(0, s["maxLength"])
        return s
    if kind == "integer":
        s = {"type": "integer"}
        if rng.random() < 0.6:
            lo = rng.randint(-500, 500)
            s["minimum"], s["maximum"] = lo, lo + rng.randint(0, 2000)
        return s
    if kind == "number":
        return {"type": "number"}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "enum":
        return {"enum": rng.sample(["alpha", "beta", "gamma", 1, 2, None, False], rng.randint(1, 4))}
    if kind == "nullable":
        inner = random_schema(rng, depth + 1)
        return {"anyOf": [inner, {"type": "null"}]}
    if kind == "array":
        return {"type": "array", "items": random_schema(rng, depth + 1),
                "maxItems": rng.randint(1, 4)}
    names = rng.sample(["id", "name", "path", "count", "enabled", "mode", "items", "limit",
                        "offset", "query"], rng.randint(1, 4))
    props = {n: random_schema(rng, depth + 1) for n in names}
    return {"type": "object", "properties": props,
            "required": [n for n in names if rng.random() < 0.7],
            "additionalProperties": False}


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        ROOT / "tests" / "data" / "grammar" / "schemas.json"
    schemas = HAND + claude_code_tools()
    rng = random.Random(2026)
    while len(schemas) < 120:
        schemas.append(random_schema(rng))
    out.write_text(json.dumps(schemas, indent=1) + "\n")
    print(f"wrote {len(schemas)} schemas to {out}")


if __name__ == "__main__":
    main()
