#!/usr/bin/env python3
"""Writes the chat-template goldens in tests/data/chat/goldens/.

The reference is Python's jinja2 driven exactly as transformers' apply_chat_template drives it:
we call transformers.utils.chat_template_utils.render_jinja_template (the function
apply_chat_template calls after loading the tokenizer), so the environment is transformers' own
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, the AssistantTracker
{% generation %} tag, its tojson, raise_exception and strftime_now) and the messages get the same
normalization (None values dropped, reasoning fields aliased). No model or hub access is needed:
apply_chat_template would add only the tokenizer's special tokens, which we pass explicitly.

Files written (one JSON object per line, after a header line):
  conversations_<template>.jsonl  {"id", "conversation": {"messages", "tools"}, "options",
                                   "expected"} or, when the template raises, {"error", "kind"}
  jinja_snippets.jsonl            {"id", "template", "context", "expected" | "error"}

Conversations are written in the canonical form that mtplx's Conversation::MessagesValue()
produces, so the C++ test can feed the JSON through Conversation::FromJson and compare.

Usage: /opt/mtplx-py/bin/python tools/chat/make_chat_goldens.py
"""
import json
import pathlib
import random
import sys

import jinja2
import transformers
from transformers.utils.chat_template_utils import (
    _compile_jinja_template,
    _normalize_chat_messages,
    render_jinja_template,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from chat_golden_cases import SNIPPETS, conversations_for  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATE_DIR = ROOT / "tests/data/chat/templates"
GOLDEN_DIR = ROOT / "tests/data/chat/goldens"
TEMPLATES = ["qwen3", "qwen3.5-4b", "qwen3.6", "qwen3-coder"]
# The special tokens of the Qwen 3 / 3.5 tokenizers (bos_token is null there).
SPECIAL_TOKENS = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
PER_TEMPLATE = 120


def describe_error(error):
    """('raise', message) for raise_exception, else ('other', 'Type: message')."""
    if type(error) is jinja2.exceptions.TemplateError:
        return "raise", str(error)
    return "other", f"{type(error).__name__}: {error}"


def render_conversation(source, conversation, options):
    messages = _normalize_chat_messages(conversation["messages"])
    tools = conversation.get("tools") or None
    kwargs = dict(SPECIAL_TOKENS)
    for key in ("enable_thinking", "preserve_thinking"):
        if key in options:
            kwargs[key] = options[key]
    try:
        rendered, _ = render_jinja_template(
            conversations=[messages],
            tools=tools,
            chat_template=source,
            add_generation_prompt=options.get("add_generation_prompt", False),
            **kwargs,
        )
        return {"expected": rendered[0]}
    except Exception as error:  # the golden records the failure
        kind, message = describe_error(error)
        return {"error": message, "kind": kind}


def render_snippet(source, context):
    try:
        compiled = _compile_jinja_template(source)
    except Exception as error:
        kind, message = describe_error(error)
        return {"error": message, "kind": kind, "phase": "parse"}
    try:
        return {"expected": compiled.render(**context)}
    except Exception as error:
        kind, message = describe_error(error)
        return {"error": message, "kind": kind, "phase": "render"}


def write_jsonl(path, header, records):
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header, ensure_ascii=False) + "\n")
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def main():
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    versions = {"transformers": transformers.__version__, "jinja2": jinja2.__version__}
    for name in TEMPLATES:
        source = (TEMPLATE_DIR / f"{name}.jinja").read_text(encoding="utf-8")
        records = []
        for index, (conversation, options) in enumerate(
            conversations_for(name, random.Random(f"mtplx-chat-{name}"), PER_TEMPLATE)
        ):
            record = {"id": index, "conversation": conversation, "options": options}
            record.update(render_conversation(source, conversation, options))
            records.append(record)
        errors = sum("error" in r for r in records)
        header = {"generator": "tools/chat/make_chat_goldens.py", "template": f"{name}.jinja",
                  "special_tokens": SPECIAL_TOKENS, "count": len(records), **versions}
        write_jsonl(GOLDEN_DIR / f"conversations_{name}.jsonl", header, records)
        print(f"{name}: {len(records)} conversations ({errors} raise errors)")
    records = []
    for index, (source, context) in enumerate(SNIPPETS):
        record = {"id": index, "template": source, "context": context}
        record.update(render_snippet(source, context))
        records.append(record)
    header = {"generator": "tools/chat/make_chat_goldens.py", "count": len(records), **versions}
    write_jsonl(GOLDEN_DIR / "jinja_snippets.jsonl", header, records)
    print(f"snippets: {len(records)} ({sum('error' in r for r in records)} errors)")


if __name__ == "__main__":
    main()
