"""The official `openai` Python SDK against `mtplx serve`: plain and streamed chat (with usage),
a tool-call round trip, reasoning on and off, legacy completions with echo and logprobs, the
model list, errors in OpenAI's shape, and greedy output equal to `mtplx run`.

Usage: python openai_sdk_test.py PATH/TO/mtplx   (in the `sdk` environment of install-clients.sh)
"""
import json
import subprocess
import sys

import openai

from harness import Server, check, model_with_template, mtplx_binary, run_scenarios

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}


def client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0)


def plain_chat(bundled, qwen36):
    reply = client(bundled).chat.completions.create(
        model="any-name", messages=[{"role": "user", "content": "Write a haiku about autumn"}],
        max_tokens=16)
    choice = reply.choices[0]
    check(isinstance(choice.message.content, str) and choice.message.content, reply)
    check(choice.finish_reason in ("stop", "length"), choice.finish_reason)
    check(reply.usage.prompt_tokens > 0 and 0 < reply.usage.completion_tokens <= 16, reply.usage)
    check(reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens)
    check(reply.model == "any-name", reply.model)


def streaming_with_usage_equals_non_streaming(bundled, qwen36):
    messages = [{"role": "user", "content": "def fibonacci(n):"}]
    whole = client(bundled).chat.completions.create(
        model="m", messages=messages, max_tokens=24, temperature=0)
    stream = client(bundled).chat.completions.create(
        model="m", messages=messages, max_tokens=24, temperature=0, stream=True,
        stream_options={"include_usage": True})
    text, usage, finish = "", None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    check(text == whole.choices[0].message.content, (text, whole.choices[0].message.content))
    check(usage is not None and usage.completion_tokens == whole.usage.completion_tokens, usage)
    check(finish == whole.choices[0].finish_reason, finish)


def tool_call_round_trip(bundled, qwen36):
    # The bundled model is too small to choose a tool: a named tool_choice makes the reply start
    # a call in the template's XML dialect, and the parser returns it as a tool call.
    c = client(qwen36)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    for choice_arg in ({"type": "function", "function": {"name": "get_weather"}}, "required"):
        reply = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL],
                                          tool_choice=choice_arg, max_tokens=24, temperature=0)
        choice = reply.choices[0]
        # The bundled model never closes the call it was made to start: cut by max_tokens, the
        # call is repaired and the reply says "length".
        check(choice.finish_reason in ("tool_calls", "length"), choice)
        calls = choice.message.tool_calls
        check(calls and calls[0].type == "function", choice.message)
        if choice_arg != "required":
            check(calls[0].function.name == "get_weather", calls[0])
        check(isinstance(json.loads(calls[0].function.arguments), dict), calls[0].function)
    # The tool result goes back in; the model answers.
    call = calls[0]
    messages += [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": call.function.name,
                                      "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 degrees."},
    ]
    answer = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL],
                                       max_tokens=16)
    check(answer.choices[0].finish_reason in ("stop", "length", "tool_calls"), answer)
    check(answer.usage.prompt_tokens > reply.usage.prompt_tokens, answer.usage)
    # Streamed: the call arrives as tool_calls deltas (name first, then argument fragments).
    stream = c.chat.completions.create(
        model="m", messages=messages[:1], tools=[WEATHER_TOOL], max_tokens=24, stream=True,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    name, arguments, finish = "", "", None
    for chunk in stream:
        for ch in chunk.choices:
            for tc in ch.delta.tool_calls or []:
                name += tc.function.name or "" if tc.function else ""
                arguments += tc.function.arguments or "" if tc.function else ""
            finish = ch.finish_reason or finish
    check(name == "get_weather" and isinstance(json.loads(arguments), dict), (name, arguments))
    check(finish in ("tool_calls", "length"), finish)


def reasoning_on_and_off(bundled, qwen36):
    # The Qwen 3.6 template opens <think> in the prompt: the reply starts as reasoning.
    c = client(qwen36)
    messages = [{"role": "user", "content": "Why is the sky blue?"}]
    # ignore_eos: the bundled model never learnt <think> and would end the turn at once; this
    # checks where the text goes, not what the model knows.
    on = c.chat.completions.create(model="m", messages=messages, max_tokens=24,
                                   extra_body={"chat_template_kwargs": {"enable_thinking": True},
                                               "ignore_eos": True})
    reasoning = (on.choices[0].message.model_extra or {}).get("reasoning_content")
    check(reasoning, on.choices[0].message)
    check(on.usage.completion_tokens_details.reasoning_tokens > 0, on.usage)
    off = c.chat.completions.create(model="m", messages=messages, max_tokens=24,
                                    extra_body={"enable_thinking": False, "ignore_eos": True})
    check(not (off.choices[0].message.model_extra or {}).get("reasoning_content"), off)
    check(off.choices[0].message.content, off)
    check(off.usage.completion_tokens_details.reasoning_tokens == 0, off.usage)
    # Streamed reasoning arrives as reasoning_content deltas.
    stream = c.chat.completions.create(model="m", messages=messages, max_tokens=12, stream=True,
                                       extra_body={"ignore_eos": True})
    streamed = ""
    for chunk in stream:
        for ch in chunk.choices:
            streamed += (ch.delta.model_extra or {}).get("reasoning_content") or ""
    check(streamed, "no reasoning_content deltas")


def completions_with_logprobs(bundled, qwen36):
    c = client(bundled)
    reply = c.completions.create(model="m", prompt="def add(a, b):\n    return", max_tokens=4,
                                 logprobs=2, echo=True, temperature=0)
    choice = reply.choices[0]
    check(choice.text.startswith("def add(a, b):\n    return"), choice.text)
    lp = choice.logprobs
    n = reply.usage.prompt_tokens + reply.usage.completion_tokens
    check(len(lp.tokens) == n and len(lp.token_logprobs) == n and len(lp.text_offset) == n, lp)
    check(lp.token_logprobs[0] is None, lp.token_logprobs[:2])
    check(all(v <= 0 for v in lp.token_logprobs[1:]), lp.token_logprobs)
    check(all(len(t) <= 2 for t in lp.top_logprobs[1:]), lp.top_logprobs)
    # The end-of-text token, if generated, is listed but not part of the text.
    shown = [t for t in lp.tokens if t not in ("<|endoftext|>", "<|im_end|>")]
    check("".join(shown) == choice.text, (lp.tokens, choice.text))
    # Scoring only: echo the prompt with its logprobs, generate nothing.
    scored = c.completions.create(model="m", prompt="import os", max_tokens=0, logprobs=0,
                                  echo=True)
    check(scored.usage.completion_tokens == 0, scored.usage)
    check(len(scored.choices[0].logprobs.tokens) == scored.usage.prompt_tokens, scored)
    streamed = "".join(ch.choices[0].text for ch in c.completions.create(
        model="m", prompt="def add(a, b):\n    return", max_tokens=4, temperature=0,
        stream=True) if ch.choices)
    check(choice.text.endswith(streamed), (streamed, choice.text))


def models_list(bundled, qwen36):
    models = client(bundled).models.list()
    check(len(models.data) == 1 and models.data[0].id == "default", models)
    check(models.data[0].model_extra["context_length"] > 0, models.data[0])


def errors_have_openai_shape(bundled, qwen36):
    c = client(bundled)
    try:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x " * 40000}])
        raise AssertionError("a prompt beyond the context window was accepted")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.code == "context_length_exceeded", e.body)
    try:
        c.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "hi"}])
        raise AssertionError("an unknown role was accepted")
    except openai.BadRequestError as e:
        check("role" in e.message and e.body.get("param") == "messages[0].role", e.body)
    try:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                  temperature=5)
        raise AssertionError("temperature 5 was accepted")
    except openai.BadRequestError as e:
        check(e.body.get("param") == "temperature", e.body)


def greedy_equals_mtplx_run(bundled, qwen36):
    mtplx = mtplx_binary()
    for prompt in ("def fibonacci(n):", "Tell me about the sea."):
        run = subprocess.run([mtplx, "run", prompt, "--json", "--temperature", "0",
                              "--max-tokens", "40", "--threads", "1"],
                             capture_output=True, text=True, check=True)
        expected = json.loads(run.stdout)
        reply = client(bundled).chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}], max_tokens=40,
            temperature=0, extra_body={"return_token_ids": True})
        ids = reply.choices[0].model_extra["token_ids"]
        check(ids == expected["token_ids"], (ids, expected["token_ids"]))
        check(reply.choices[0].message.content == expected["text"])


def main():
    mtplx = mtplx_binary()
    with Server(mtplx) as bundled, Server(mtplx, model=model_with_template("qwen3.6.jinja")) as q36:
        code = run_scenarios([plain_chat, streaming_with_usage_equals_non_streaming,
                              tool_call_round_trip, reasoning_on_and_off,
                              completions_with_logprobs, models_list, errors_have_openai_shape,
                              greedy_equals_mtplx_run], bundled, q36)
        for s in (bundled, q36):
            check(s.alive(), "the server died:\n" + s.logs())
        if code:
            print(bundled.logs()[-4000:], q36.logs()[-4000:], sep="\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
