"""The official `anthropic` Python SDK against `mtplx serve`: plain and streamed messages, a
tool_use / tool_result round trip, thinking on and off, count_tokens, errors in Anthropic's
shape; and the real Claude Code request (tests/data/clients/claude-code) replayed as a 3-turn
agent conversation whose later turns reuse the cached prefix.

Usage: python anthropic_sdk_test.py PATH/TO/mtplx   (in the `sdk` environment)
"""
import copy
import json
import os
import sys
import time
import urllib.request

import anthropic

from harness import ROOT, Server, check, model_with_template, mtplx_binary, run_scenarios

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]},
}
FIXTURE = os.path.join(ROOT, "tests", "data", "clients", "claude-code", "2.1.328-plain-prompt.json")


def client(server):
    return anthropic.Anthropic(base_url=server.base, api_key="unused", max_retries=0)


def plain_message(bundled, qwen36):
    reply = client(bundled).messages.create(
        model="claude-sonnet-4-5", max_tokens=16,
        messages=[{"role": "user", "content": "Write a haiku about autumn"}])
    check(reply.type == "message" and reply.role == "assistant", reply)
    check(reply.content and reply.content[0].type == "text" and reply.content[0].text, reply)
    check(reply.stop_reason in ("end_turn", "max_tokens"), reply.stop_reason)
    check(reply.usage.input_tokens > 0 and 0 < reply.usage.output_tokens <= 16, reply.usage)
    check(reply.model == "claude-sonnet-4-5", reply.model)


def streamed_message(bundled, qwen36):
    c = client(bundled)
    # This SDK version takes no `temperature` argument: it goes in the body as an extra field.
    kwargs = dict(model="m", max_tokens=20, system="You write Python.",
                  messages=[{"role": "user", "content": "def fibonacci(n):"}],
                  extra_body={"temperature": 0})
    whole = c.messages.create(**kwargs)
    with c.messages.stream(**kwargs) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    check(text == whole.content[0].text, (text, whole.content))
    check(final.stop_reason == whole.stop_reason and final.usage.output_tokens > 0, final)


def tool_use_round_trip(bundled, qwen36):
    c = client(qwen36)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    for choice in ({"type": "tool", "name": "get_weather"}, {"type": "any"}):
        reply = c.messages.create(model="m", max_tokens=24, tools=[WEATHER], tool_choice=choice,
                                  messages=messages, extra_body={"temperature": 0})
        uses = [b for b in reply.content if b.type == "tool_use"]
        # The bundled model never closes the call it was made to start: cut by max_tokens, the
        # call is repaired and stop_reason says "max_tokens".
        check(reply.stop_reason in ("tool_use", "max_tokens") and uses, reply)
        check(uses[0].name == "get_weather" and isinstance(uses[0].input, dict), uses[0])
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id,
                                      "content": "Sunny, 21 degrees."}]},
    ]
    answer = c.messages.create(model="m", max_tokens=16, tools=[WEATHER], messages=messages)
    check(answer.stop_reason in ("end_turn", "max_tokens", "tool_use"), answer)
    check(answer.usage.input_tokens + answer.usage.cache_read_input_tokens >
          reply.usage.input_tokens + reply.usage.cache_read_input_tokens, answer.usage)
    # Streamed: a tool_use block whose input arrives as input_json_delta fragments.
    with c.messages.stream(model="m", max_tokens=24, tools=[WEATHER], messages=messages[:1],
                           tool_choice={"type": "tool", "name": "get_weather"}) as stream:
        final = stream.get_final_message()
    uses = [b for b in final.content if b.type == "tool_use"]
    check(final.stop_reason in ("tool_use", "max_tokens") and uses and
          uses[0].name == "get_weather", final)


def thinking_on_and_off(bundled, qwen36):
    c = client(qwen36)
    messages = [{"role": "user", "content": "Why is the sky blue?"}]
    # ignore_eos: the bundled model never learnt <think>; this checks where the text goes.
    on = c.messages.create(model="m", max_tokens=24, messages=messages,
                           thinking={"type": "enabled", "budget_tokens": 1024},
                           extra_body={"ignore_eos": True})
    check(on.content and on.content[0].type == "thinking" and on.content[0].thinking, on)
    off = c.messages.create(model="m", max_tokens=24, messages=messages,
                            thinking={"type": "disabled"}, extra_body={"ignore_eos": True})
    check(all(b.type != "thinking" for b in off.content), off)
    with c.messages.stream(model="m", max_tokens=12, messages=messages,
                           thinking={"type": "enabled", "budget_tokens": 1024},
                           extra_body={"ignore_eos": True}) as stream:
        kinds = [e.delta.type for e in stream if e.type == "content_block_delta"]
    check("thinking_delta" in kinds, kinds)


def count_tokens(bundled, qwen36):
    c = client(bundled)
    messages = [{"role": "user", "content": "Hello there"}]
    counted = c.messages.count_tokens(model="m", messages=messages, system="Be brief.")
    reply = c.messages.create(model="m", max_tokens=4, messages=messages, system="Be brief.")
    check(counted.input_tokens == reply.usage.input_tokens + reply.usage.cache_read_input_tokens,
          (counted, reply.usage))


def errors_have_anthropic_shape(bundled, qwen36):
    c = client(bundled)
    try:
        c.messages.create(model="m", max_tokens=4, messages=[])
        raise AssertionError("empty messages were accepted")
    except anthropic.BadRequestError as e:
        check(e.body["type"] == "error" and e.body["error"]["type"] == "invalid_request_error",
              e.body)
    try:
        c.messages.create(model="m", max_tokens=4,
                          messages=[{"role": "user", "content": "x " * 40000}])
        raise AssertionError("a prompt beyond the context window was accepted")
    except anthropic.BadRequestError as e:
        check("context window" in e.body["error"]["message"], e.body)


def sse_events(response):
    """(event, data) pairs of an SSE stream, with the time each arrived."""
    event = None
    for raw in response:
        line = raw.decode("utf-8").rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            yield event, json.loads(line[6:]), time.monotonic()


def replay(server, body):
    """Sends a Claude Code request with its own headers; returns (events, seconds to the first
    content delta) after checking the event grammar."""
    fixture = json.load(open(FIXTURE))
    headers = {k: v for k, v in fixture["headers"].items()
               if k.lower() not in ("host", "content-length", "accept-encoding", "connection")}
    request = urllib.request.Request(server.base + fixture["path"], data=json.dumps(body).encode(),
                                     headers=headers, method="POST")
    start = time.monotonic()
    first_delta = None
    events = []
    with urllib.request.urlopen(request, timeout=600) as response:
        check(response.headers["Content-Type"].startswith("text/event-stream"), response.headers)
        for event, data, at in sse_events(response):
            check(event == data["type"], (event, data))
            events.append(data)
            if event == "content_block_delta" and first_delta is None:
                first_delta = at - start
    kinds = [e["type"] for e in events]
    check(kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds)
    check(kinds[-2] == "message_delta" and events[-2]["delta"]["stop_reason"], events[-2])
    open_block = None
    for e in events:  # blocks open, take deltas of their own index, then close, in order
        if e["type"] == "content_block_start":
            check(open_block is None, kinds)
            open_block = e["index"]
        elif e["type"] == "content_block_delta":
            check(e["index"] == open_block, e)
        elif e["type"] == "content_block_stop":
            check(e["index"] == open_block, e)
            open_block = None
    check(open_block is None and first_delta is not None, kinds)
    return events, first_delta


def reply_text(events):
    return "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")


def claude_code_agent_replay(bundled, qwen36):
    """Claude Code's real request (12 tools, ~50 KB), then two more turns in its exact shape: a
    tool_use answer with a tool_result, and a follow-up. Later turns restore the cached prefix
    and prefill only their new suffix."""
    body = json.load(open(FIXTURE))["body"]
    events1, ttft1 = replay(bundled, body)
    usage1 = events1[0]["message"]["usage"]
    prompt1 = usage1["input_tokens"] + usage1["cache_read_input_tokens"]
    check(prompt1 > 5000, usage1)

    turn2 = copy.deepcopy(body)
    # The billing header changes every request: it must not break the cached prefix.
    turn2["system"][0]["text"] = turn2["system"][0]["text"].replace("b7f", "c9e")
    turn2["messages"] += [
        {"role": "assistant", "content": [
            {"type": "text", "text": reply_text(events1) or "Let me look."},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash",
             "input": {"command": "ls", "description": "List files"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "README.md\nsrc\n"}]},
    ]
    events2, ttft2 = replay(bundled, turn2)
    usage2 = events2[0]["message"]["usage"]
    check(usage2["cache_read_input_tokens"] >= prompt1 - 16, (usage1, usage2))

    turn3 = copy.deepcopy(turn2)
    turn3["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": reply_text(events2) or "Done."}]},
        {"role": "user", "content": [{"type": "text", "text": "Now say goodbye."}]},
    ]
    events3, ttft3 = replay(bundled, turn3)
    usage3 = events3[0]["message"]["usage"]
    prompt2 = usage2["input_tokens"] + usage2["cache_read_input_tokens"]
    check(usage3["cache_read_input_tokens"] >= prompt2 - 16, (usage2, usage3))
    ratio = ttft2 / ttft1
    print(f"  prompt {prompt1} tokens: time to first token {ttft1:.3f}s; turn 2 {ttft2:.3f}s "
          f"({usage2['cache_read_input_tokens']} cached, ratio {ratio:.3f}); turn 3 {ttft3:.3f}s "
          f"({usage3['cache_read_input_tokens']} cached)")
    check(ratio <= 0.25, f"turn 2 time to first token is {ratio:.2f} of turn 1's")


def main():
    mtplx = mtplx_binary()
    # --max-tokens keeps Claude Code's 32,000-token replies short.
    with Server(mtplx, "--max-tokens", "32") as bundled, \
            Server(mtplx, model=model_with_template("qwen3.6.jinja")) as qwen36:
        code = run_scenarios([plain_message, streamed_message, tool_use_round_trip,
                              thinking_on_and_off, count_tokens, errors_have_anthropic_shape,
                              claude_code_agent_replay], bundled, qwen36)
        for s in (bundled, qwen36):
            check(s.alive(), "the server died:\n" + s.logs())
        if code:
            print(bundled.logs()[-4000:], qwen36.logs()[-4000:], sep="\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
