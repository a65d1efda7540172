"""Structured output through the official SDKs, validated by PyPI `jsonschema`: every schema of
tests/data/grammar/schemas.json (hand-written ones for each keyword, the Claude Code tool schemas,
seeded random ones) as an OpenAI json_schema response_format at temperature 0 and 0.8 with MTP
on; json_object mode; forced tool calls (OpenAI "required" and a named function, Anthropic "any"
and "tool") whose arguments must validate against the tool's schema; a streamed document; bad
schemas and grammars answered 400 naming the problem.

A reply that ends with finish_reason "stop" must parse and validate; one cut by max_tokens
("length") is never claimed complete, and must stay rare.

Usage: python structured_test.py PATH/TO/mtplx   (in the `sdk` environment)
"""
import json
import os
import sys

import anthropic
import jsonschema
import openai

from harness import ROOT, Server, check, model_with_template, mtplx_binary, run_scenarios

CORPUS = os.path.join(ROOT, "tests", "data", "grammar", "schemas.json")
VALIDATOR = jsonschema.Draft202012Validator
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 30},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7},
                          "units": {"enum": ["metric", "imperial"]}},
           "required": ["city", "days"], "additionalProperties": False}
SEARCH = {"type": "object", "properties": {"query": {"type": "string", "maxLength": 40},
                                           "limit": {"type": "integer", "minimum": 1,
                                                     "maximum": 20}},
          "required": ["query"], "additionalProperties": False}


def openai_client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0)


def validate(document, schema, where):
    errors = sorted(VALIDATOR(schema, format_checker=FORMATS).iter_errors(document),
                    key=lambda e: e.path)
    check(not errors, f"{where}: {document!r} fails its schema: {errors[0].message if errors else ''}")


def schema_corpus(bundled, qwen36):
    schemas = json.load(open(CORPUS))
    check(len(schemas) >= 100, len(schemas))
    c = openai_client(bundled)
    complete = cut = 0
    for i, schema in enumerate(schemas):
        for temperature in (0.0, 0.8):
            reply = c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Reply with a JSON document."}],
                response_format={"type": "json_schema",
                                 "json_schema": {"name": f"s{i}", "schema": schema,
                                                 "strict": True}},
                max_tokens=300, temperature=temperature, seed=i)
            choice = reply.choices[0]
            if choice.finish_reason == "length":
                cut += 1
                continue
            check(choice.finish_reason == "stop", (i, choice.finish_reason))
            try:
                document = json.loads(choice.message.content)
            except json.JSONDecodeError as e:
                raise AssertionError(f"schema {i} T={temperature}: not JSON: "
                                     f"{choice.message.content!r}") from e
            validate(document, schema, f"schema {i} T={temperature}")
            complete += 1
    print(f"  {complete} complete and valid, {cut} cut by max_tokens", flush=True)
    check(cut <= (complete + cut) // 5, f"{cut} replies ran into max_tokens")


def json_object_mode(bundled, qwen36):
    c = openai_client(bundled)
    for temperature in (0.0, 0.8):
        reply = c.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Describe a cat as JSON."}],
            response_format={"type": "json_object"}, max_tokens=200, temperature=temperature)
        choice = reply.choices[0]
        if choice.finish_reason == "stop":
            check(isinstance(json.loads(choice.message.content), dict), choice.message.content)


def streamed_document(bundled, qwen36):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"},
                                               "n": {"type": "integer", "minimum": 0,
                                                     "maximum": 99}},
              "required": ["ok", "n"], "additionalProperties": False}
    stream = openai_client(bundled).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "status?"}], stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
        max_tokens=100, temperature=0.8)
    text, finish = "", None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    check(finish == "stop", finish)
    validate(json.loads(text), schema, "streamed")


def openai_tools():
    return [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
            {"type": "function", "function": {"name": "search", "parameters": SEARCH}}]


def forced_openai_calls(bundled, qwen36):
    schemas = {"get_weather": WEATHER, "search": SEARCH}
    for server in (bundled, qwen36):  # hermes JSON calls (Qwen 3), Qwen XML calls (Qwen 3.6)
        c = openai_client(server)
        for choice in ("required", {"type": "function", "function": {"name": "search"}}):
            for temperature in (0.0, 0.8):
                reply = c.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "Weather in Paris?"}],
                    tools=openai_tools(), tool_choice=choice, max_tokens=200,
                    temperature=temperature)
                out = reply.choices[0]
                check(out.finish_reason == "tool_calls", (choice, out))
                call = out.message.tool_calls[0].function
                if isinstance(choice, dict):
                    check(call.name == "search", call)
                validate(json.loads(call.arguments), schemas[call.name], f"{choice} {call.name}")


def parallel_forced_calls(bundled, qwen36):
    """Asked for in so many words, a forced call may be followed by more; each complete one is
    valid (a last one max_tokens cut short is reported, but the reply says it was cut)."""
    schemas = {"get_weather": WEATHER, "search": SEARCH}
    c = openai_client(qwen36)
    reply = c.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Paris and Rome?"}],
        tools=openai_tools(), tool_choice="required", parallel_tool_calls=True, max_tokens=300,
        temperature=0.8, seed=3)
    out = reply.choices[0]
    calls = out.message.tool_calls or []
    check(calls, out)
    complete = calls if out.finish_reason == "tool_calls" else calls[:-1]
    for call in complete:
        validate(json.loads(call.function.arguments), schemas[call.function.name], "parallel")
    a = anthropic.Anthropic(base_url=qwen36.base, api_key="unused", max_retries=0)
    single = a.messages.create(
        model="m", max_tokens=200, messages=[{"role": "user", "content": "Weather?"}],
        tools=[{"name": "get_weather", "description": "w", "input_schema": WEATHER}],
        tool_choice={"type": "any", "disable_parallel_tool_use": True})
    check(single.stop_reason == "tool_use", single)
    check(len([b for b in single.content if b.type == "tool_use"]) == 1, single)


def forced_anthropic_calls(bundled, qwen36):
    tools = [{"name": "get_weather", "description": "weather", "input_schema": WEATHER},
             {"name": "search", "description": "search", "input_schema": SEARCH}]
    schemas = {"get_weather": WEATHER, "search": SEARCH}
    for server in (bundled, qwen36):
        c = anthropic.Anthropic(base_url=server.base, api_key="unused", max_retries=0)
        for choice in ({"type": "any"}, {"type": "tool", "name": "get_weather"}):
            for temperature in (0.0, 0.8):
                reply = c.messages.create(
                    model="m", max_tokens=200, tools=tools, tool_choice=choice,
                    messages=[{"role": "user", "content": "Weather in Paris?"}],
                    extra_body={"temperature": temperature})
                check(reply.stop_reason == "tool_use", (choice, reply))
                use = [b for b in reply.content if b.type == "tool_use"][0]
                if choice["type"] == "tool":
                    check(use.name == "get_weather", use)
                validate(use.input, schemas[use.name], f"{choice} {use.name}")


def bad_requests(bundled, qwen36):
    c = openai_client(bundled)
    cases = [
        ({"type": "json_schema", "json_schema": {"name": "s", "schema": {
            "type": "object", "properties": {"a": {"type": "integer", "multipleOf": 2}}}}},
         "multipleOf"),
        ({"type": "json_schema", "json_schema": {"name": "s", "schema": {"$ref": "#/nope"}}},
         "points nowhere"),
        ({"type": "yaml"}, "response_format.type"),
    ]
    for response_format, needle in cases:
        try:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                      response_format=response_format, max_tokens=5)
            raise AssertionError(f"accepted {response_format}")
        except openai.BadRequestError as e:
            check(needle in str(e), (needle, str(e)))
    try:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                  max_tokens=5, extra_body={"grammar": "root ::= missing"})
        raise AssertionError("accepted a bad grammar")
    except openai.BadRequestError as e:
        check("never defined" in str(e), str(e))
    reply = c.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "yes or no?"}], max_tokens=5,
        extra_body={"grammar": 'root ::= "yes" | "no"'}, temperature=0.8)
    check(reply.choices[0].message.content in ("yes", "no"), reply.choices[0].message.content)
    check(reply.to_dict()["mtplx_stats"]["structured_output"] == "complete", reply.to_dict())
    # A document max_tokens cuts short is never claimed complete.
    cut = c.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], max_tokens=3,
        response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": {
            "type": "object", "properties": {"text": {"type": "string", "minLength": 50}},
            "required": ["text"]}}})
    check(cut.choices[0].finish_reason == "length", cut)
    check(cut.to_dict()["mtplx_stats"]["structured_output"].startswith("incomplete"), cut.to_dict())


def main():
    mtplx = mtplx_binary()
    with Server(mtplx, "--seed", "0") as bundled, \
            Server(mtplx, "--seed", "0", model=model_with_template("qwen3.6.jinja")) as qwen36:
        code = run_scenarios([schema_corpus, json_object_mode, streamed_document,
                              forced_openai_calls, forced_anthropic_calls, parallel_forced_calls,
                              bad_requests],
                             bundled, qwen36)
        check(bundled.alive() and qwen36.alive(), "a server died")
    return code


if __name__ == "__main__":
    sys.exit(main())
