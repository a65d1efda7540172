#!/usr/bin/env python3
"""Generates the tokenizer goldens in tests/data/tokenizer/ with Hugging Face `tokenizers`.

Deterministic: a fixed seed drives every random choice, so rerunning with the same
`tokenizers` version (recorded in each file's header line) gives identical files.

    build-tok/tests/tokenizer/tokenizer_write_synthetic /tmp/synth-small
    build-tok/tests/tokenizer/tokenizer_write_synthetic /tmp/synth-large 248044
    /opt/mtplx-py/bin/python tools/tokenizer/make_goldens.py \
        --qwen3 tests/data/tokenizers/qwen3/tokenizer.json \
        --synthetic /tmp/synth-small/tokenizer.json \
        --synthetic-large /tmp/synth-large/tokenizer.json \
        --out-dir tests/data/tokenizer

Each output is JSON Lines: a header object, then one object per string with
  "text":  the input,
  "ids":   encode(text, add_special_tokens=False).ids (added tokens in the text are matched),
  "plain": the ids when added tokens are treated as ordinary text (only when they differ).
"""

import argparse
import json
import random
import shutil
import unicodedata
from pathlib import Path

import tokenizers

SEED = 20240517
COUNT = 2400

WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from "
    "or one had by word but not what all were we when your can said there use an each which "
    "she do how their if will up other about out many then them these so some her would make "
    "like him into time has look two more write go see number no way could people my than "
    "first water been call who oil its now find long down day did get come made may part "
    "lighthouse tokenizer inference engine model weights quantization attention gradient "
    "speculative decoding throughput latency kernel vector matrix tensor checkpoint"
).split()
CONTRACTIONS = ["don't", "I'm", "you're", "we've", "they'll", "he'd", "it's", "can't", "won't",
                "y'all", "o'clock", "rock'n'roll", "'tis", "ma'am", "I'd've", "shouldn't've"]
APOSTROPHES = ["'", "'", "'", "\u2019", "\u02bc", "\u2032"]
IDENTIFIERS = ["x", "value", "count", "my_var", "camelCase", "HTTPServer", "__init__", "i", "n2",
               "parse_json", "kMaxTokens", "self", "buffer", "_private", "ΔT", "naïve"]
COMBINING = [chr(c) for c in range(0x300, 0x370)]
HIRAGANA = [chr(c) for c in range(0x3041, 0x3097)]
KATAKANA = [chr(c) for c in range(0x30A1, 0x30FB)]
HANZI = list("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对"
             "可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面"
             "公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情"
             "部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北"
             "少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神"
             "数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台")
HANGUL_LEADS = [chr(c) for c in range(0x1100, 0x1113)]
HANGUL_VOWELS = [chr(c) for c in range(0x1161, 0x1176)]
HANGUL_TAILS = [chr(c) for c in range(0x11A8, 0x11C3)]
EMOJI = ([chr(c) for c in range(0x1F300, 0x1F650)] + [chr(c) for c in range(0x1F680, 0x1F6C6)]
         + [chr(c) for c in range(0x1F900, 0x1F9FF)] + list("☀☂☃★☎☕♻⚡⚽⛄✅✈✉✨❤❓➡"))
ZWJ_SEQUENCES = ["👩\u200d👩\u200d👧\u200d👦", "👨\u200d💻", "🏳\ufe0f\u200d🌈", "🧑🏽\u200d🚀",
                 "😶\u200d🌫\ufe0f", "👁\ufe0f\u200d🗨\ufe0f", "🐻\u200d❄\ufe0f", "❤\ufe0f\u200d🔥",
                 "👩🏿\u200d🤝\u200d👨🏻", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"]
SKIN_TONES = [chr(c) for c in range(0x1F3FB, 0x1F400)]
WHITESPACE = [" ", " ", " ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u2029",
              "\x0b", "\x0c", "\x85", "\u2003", "\u200b", "\ufeff", "\u1680", "\u202f"]
OTHER_DIGITS = list("٠١٢٣٤٥٦٧٨٩۰۴०१२३४५६७८९০১২৩০๑๒๓０１２３４５６７８９²³¹½¼¾ⅫⅣ①②⑳〇")
# Unicode blocks whose characters are stable across Unicode 9..15, so the NFC and property
# tables of Hugging Face (Rust crates), PCRE2 and utf8proc agree on them.
RANDOM_RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x250, 0x2FF), (0x300, 0x36F), (0x370, 0x3FF),
                 (0x400, 0x4FF), (0x530, 0x58F), (0x591, 0x5F4), (0x600, 0x6FF), (0x900, 0x97F),
                 (0x980, 0x9FF), (0xE00, 0xE5B), (0x10A0, 0x10FF), (0x1E00, 0x1EFF),
                 (0x2000, 0x206F), (0x20A0, 0x20BF), (0x2100, 0x214F), (0x2190, 0x21FF),
                 (0x2200, 0x22FF), (0x2500, 0x257F), (0x3000, 0x303F), (0x3040, 0x30FF),
                 (0x4E00, 0x9FA5), (0xAC00, 0xD7A3), (0xFF01, 0xFF60), (0x1F300, 0x1F64F),
                 (0xE000, 0xE0FF), (0x1D400, 0x1D7FF), (0x20000, 0x2A6D6)]
ADDED_LOOKALIKES = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
                    "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
                    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|vision_start|>",
                    "<|image_pad|>", "<|vision_end|>", "<|audio_start|>", "<tts_pad>",
                    "<|im_end", "<|im_end|", "<|IM_END|>", "< |im_end|>", "<|im_end|>>",
                    "<<|im_start|>", "<|im_start|><|im_start|>", "<|endoftext|>\n", "<", "|>",
                    "<||>", "<|object_ref_start|>", "<|box_end|>", "<|repo_name|>", "<|file_sep|>"]


def pick(rng, items):
    return items[rng.randrange(len(items))]


def vary_case(rng, text):
    style = rng.randrange(5)
    if style == 0:
        return text.upper()
    if style == 1:
        return text.title()
    if style == 2:
        return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)
    return text


def contraction(rng):
    word = vary_case(rng, pick(rng, CONTRACTIONS))
    word = word.replace("'", pick(rng, APOSTROPHES))
    if rng.random() < 0.1:
        word = word.replace("s", "\u017f")  # long s: case-folds to s inside (?i:'s)
    return word


def sentence(rng, length=None):
    length = length or rng.randint(3, 18)
    words = []
    for _ in range(length):
        roll = rng.random()
        if roll < 0.12:
            words.append(contraction(rng))
        elif roll < 0.17:
            words.append(str(rng.randint(0, 10**rng.randint(1, 7))))
        else:
            words.append(vary_case(rng, pick(rng, WORDS)) if rng.random() < 0.2
                         else pick(rng, WORDS))
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    return text + pick(rng, [".", ".", "!", "?", "...", ":", ";", " —", "?!", ""])


def prose(rng):
    parts = [sentence(rng) for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.3:
        parts.insert(rng.randrange(len(parts) + 1), f'"{sentence(rng, 5)}"')
    if rng.random() < 0.2:
        parts.append(f"({sentence(rng, 4)})")
    return pick(rng, [" ", "  ", "\n", "\n\n", " "]).join(parts)


def python_code(rng, ident, indent, newline):
    n = rng.randint(0, 10**6)
    return newline.join([
        f"def {ident}(a, b={n}):",
        f"{indent}\"\"\"Returns {pick(rng, WORDS)} of a and b.\"\"\"",
        f"{indent}if a is None or b < -{n % 97}:",
        f"{indent}{indent}raise ValueError(f\"bad {{a!r}}: {ident}\")",
        f"{indent}return [x ** 2 for x in range(a) if x % 3 == 0]  # {sentence(rng, 3)}",
        "", f"print({ident}({rng.randint(0, 99)}, b=0x{n:x}))"])


def c_code(rng, ident, indent, newline):
    n = rng.randint(0, 10**5)
    return newline.join([
        "#include <vector>", f"static int {ident}(const std::vector<int>& v) {{",
        f"{indent}int sum = 0;  // {sentence(rng, 3)}",
        f"{indent}for (size_t i = 0; i < v.size(); ++i) sum += v[i] * {n};",
        f"{indent}return sum >= {n}u ? sum : -1;", "}"])


def js_code(rng, ident, indent, newline):
    return newline.join([
        f"const {ident} = async (url) => {{",
        f"{indent}const res = await fetch(`${{url}}/api/v{rng.randint(1, 3)}`);",
        f"{indent}if (!res.ok) throw new Error('HTTP ' + res.status);",
        f"{indent}return res.json(); // {pick(rng, WORDS)}", "};"])


def rust_code(rng, ident, indent, newline):
    return newline.join([
        f"fn {ident}<'a>(s: &'a str) -> Option<&'a str> {{",
        f"{indent}s.split_whitespace().find(|w| w.len() > {rng.randint(1, 9)})", "}"])


def misc_code(rng, ident, indent, newline):
    choice = rng.randrange(5)
    if choice == 0:
        return f"SELECT id, name FROM users WHERE age >= {rng.randint(1, 99)} ORDER BY name;"
    if choice == 1:
        return newline.join(["#!/bin/bash", "set -euo pipefail",
                             f"for f in *.txt; do echo \"$f\" | wc -c; done > {ident}.log"])
    if choice == 2:
        return json.dumps({ident: [rng.randint(0, 1000) for _ in range(3)], "ok": True,
                           "name": sentence(rng, 3)}, indent=rng.choice([None, 2]))
    if choice == 3:
        return f'<div class="{ident}">{newline}{indent}<p>{sentence(rng, 4)}</p>{newline}</div>'
    return newline.join(["```python", f"{ident} = {{'k': [1, 2, 3]}}", "```",
                         f"- **{pick(rng, WORDS)}**: `{ident}`"])


def code(rng):
    ident = pick(rng, IDENTIFIERS)
    indent = pick(rng, ["    ", "  ", "\t", "        "])
    newline = pick(rng, ["\n", "\n", "\r\n"])
    maker = pick(rng, [python_code, c_code, js_code, rust_code, misc_code])
    return maker(rng, ident, indent, newline)


def cjk(rng):
    style = rng.randrange(5)
    if style == 0:
        return "".join(pick(rng, HANZI) for _ in range(rng.randint(2, 40))) + pick(rng, "。，！？")
    if style == 1:
        pools = [HIRAGANA, KATAKANA, HANZI, list("、。「」ー")]
        return "".join(pick(rng, pick(rng, pools)) for _ in range(rng.randint(2, 40)))
    if style == 2:
        return "".join(chr(rng.randint(0xAC00, 0xD7A3)) if rng.random() < 0.9 else " "
                       for _ in range(rng.randint(2, 30)))
    if style == 3:  # decomposed Hangul jamo, which NFC composes into syllables
        return "".join(pick(rng, HANGUL_LEADS) + pick(rng, HANGUL_VOWELS)
                       + (pick(rng, HANGUL_TAILS) if rng.random() < 0.5 else "")
                       for _ in range(rng.randint(1, 8)))
    return (f"{sentence(rng, 3)} {''.join(pick(rng, HANZI) for _ in range(5))}"
            f"{rng.randint(0, 9999)}apple工作ＡＢＣ１２３")


def emoji(rng):
    parts = []
    for _ in range(rng.randint(1, 8)):
        roll = rng.random()
        if roll < 0.3:
            parts.append(pick(rng, ZWJ_SEQUENCES))
        elif roll < 0.45:
            parts.append(pick(rng, ["👍", "👋", "🧑", "👩", "✋"]) + pick(rng, SKIN_TONES))
        elif roll < 0.55:
            parts.append(chr(0x1F1E6 + rng.randrange(26)) + chr(0x1F1E6 + rng.randrange(26)))
        elif roll < 0.6:
            parts.append(pick(rng, "#*0123456789") + "\ufe0f\u20e3")
        elif roll < 0.7:
            parts.append(pick(rng, WORDS))
        else:
            parts.append(pick(rng, EMOJI) + ("\ufe0f" if rng.random() < 0.2 else ""))
    return pick(rng, ["", " "]).join(parts)


def combining(rng):
    style = rng.randrange(5)
    if style == 0:  # random marks in random order: NFC reorders and composes them
        return "".join(pick(rng, "aeiouncAEOZ") + "".join(pick(rng, COMBINING)
                       for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(1, 12)))
    if style == 1:
        return unicodedata.normalize("NFD", pick(rng, ["Cửa Việt", "Tiếng Việt có dấu",
                                                      "Ångström", "crème brûlée", "Dvořák"]))
    if style == 2:
        return pick(rng, ["\u0915\u093c\u0937\u093f", "\u0928\u093c", "हिन्दी भाषा",
                          "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd", "مَرْحَبًا بِكُمْ",
                          "ภาษาไทย ที่นี่", "\u212b\u2126\u212a K", "ﬁ ﬂ ﬀ", "x\u0345\u0314y"])
    if style == 3:
        return f"{pick(rng, WORDS)}\u0301{pick(rng, WORDS)} \u0308{pick(rng, WORDS)}"
    return "".join(pick(rng, COMBINING) for _ in range(rng.randint(1, 6)))


def whitespace(rng):
    parts = []
    for _ in range(rng.randint(1, 10)):
        run = "".join(pick(rng, WHITESPACE) for _ in range(rng.randint(1, 6)))
        parts.append(run)
        if rng.random() < 0.7:
            parts.append(pick(rng, WORDS + ["!", "(", "=", "7", "é", "中"]))
    return "".join(parts)


def digits(rng):
    style = rng.randrange(6)
    if style == 0:
        return str(rng.randint(0, 10**rng.randint(1, 60)))
    if style == 1:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 12)}f}"
    if style == 2:
        return f"{rng.randint(0, 10**9):,} and {rng.randint(0, 10**9):_} and {rng.random():e}"
    if style == 3:
        return f"0x{rng.getrandbits(64):X} 0b{rng.getrandbits(12):b} 0o{rng.getrandbits(9):o}"
    if style == 4:
        return "".join(pick(rng, OTHER_DIGITS) for _ in range(rng.randint(1, 12)))
    return (f"{rng.randint(1900, 2100)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} +1 (555) 010-{rng.randint(0, 9999):04d}")


def added_tokens(rng):
    style = rng.randrange(3)
    if style == 0:
        role = pick(rng, ["system", "user", "assistant"])
        think = "<think>\n" + sentence(rng) + "\n</think>\n\n" if rng.random() < 0.5 else ""
        return f"<|im_start|>{role}\n{think}{prose(rng)}<|im_end|>\n<|im_start|>assistant\n"
    if style == 1:
        return ('<tool_call>\n{"name": "' + pick(rng, IDENTIFIERS) + '", "arguments": {"q": "'
                + sentence(rng, 3) + '"}}\n</tool_call>')
    return "".join(pick(rng, ADDED_LOOKALIKES) if rng.random() < 0.5 else pick(rng, WORDS) + " "
                   for _ in range(rng.randint(1, 8)))


def random_unicode(rng):
    chars = []
    for _ in range(rng.randint(1, 40)):
        while True:
            low, high = pick(rng, RANDOM_RANGES)
            c = chr(rng.randint(low, high))
            if unicodedata.category(c) not in ("Cn", "Cs"):
                break
        chars.append(c)
    return "".join(chars)


def control(rng):
    return "".join(chr(rng.randint(0, 0x1F)) if rng.random() < 0.5 else chr(rng.randint(0x20, 0x7F))
                   for _ in range(rng.randint(1, 20)))


GENERATORS = [prose, prose, code, code, cjk, emoji, combining, whitespace, digits, digits,
              added_tokens, random_unicode, random_unicode, control]


def make_strings(rng, count):
    fixed = ["", " ", "\n", "a", "Hello world", "<|im_end|>", "'s", "'S", "'\u017f", "\u00a0",
             " " * 300, "=" * 200, "a" * 500 + "!", "\r\n" * 40]
    strings = list(fixed)
    while len(strings) < count:
        maker = pick(rng, GENERATORS)
        text = maker(rng)
        if rng.random() < 0.15:  # glue two kinds together
            text += pick(rng, ["", " ", "\n"]) + pick(rng, GENERATORS)(rng)
        strings.append(text)
    return strings


def plain_tokenizer(tokenizer_json):
    """The same tokenizer with no added tokens: encodes "<|im_end|>" as ordinary text."""
    data = json.loads(tokenizer_json)
    data["added_tokens"] = []
    return tokenizers.Tokenizer.from_str(json.dumps(data))


def gpt2_style_json(path):
    """Qwen3's vocabulary behind a GPT-2 style pipeline: no normalizer, a ByteLevel
    pre-tokenizer with its own regex and add_prefix_space, and merges written as "a b"."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    data["normalizer"] = None
    data["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                             "use_regex": True}
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
    return json.dumps(data, ensure_ascii=False)


def write_goldens(tokenizer_json, name, strings, out_path):
    full = tokenizers.Tokenizer.from_str(tokenizer_json)
    plain = plain_tokenizer(tokenizer_json)
    header = {"generator": "tools/tokenizer/make_goldens.py", "tokenizer": name,
              "tokenizers_version": tokenizers.__version__, "seed": SEED, "count": len(strings)}
    lines = [json.dumps(header, ensure_ascii=False)]
    for text in strings:
        ids = full.encode(text, add_special_tokens=False).ids
        record = {"text": text, "ids": ids}
        plain_ids = plain.encode(text, add_special_tokens=False).ids
        if plain_ids != ids:
            record["plain"] = plain_ids
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    out_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{out_path}: {len(strings)} strings, {out_path.stat().st_size} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--qwen3", required=True, help="shared Qwen3 tokenizer.json")
    parser.add_argument("--synthetic", required=True, help="synthetic tokenizer.json (base 960)")
    parser.add_argument("--synthetic-large", required=True,
                        help="synthetic tokenizer.json with base 248044")
    parser.add_argument("--out-dir", required=True, type=Path)
    args = parser.parse_args()

    strings = make_strings(random.Random(SEED), COUNT)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    def read(path):
        return Path(path).read_text(encoding="utf-8")

    write_goldens(read(args.qwen3), "qwen3", strings, args.out_dir / "qwen3_goldens.jsonl")
    write_goldens(gpt2_style_json(args.qwen3), "qwen3 vocabulary, GPT-2 style pipeline",
                  strings[2::8], args.out_dir / "gpt2_style_goldens.jsonl")
    write_goldens(read(args.synthetic), "synthetic (added_token_base 960)", strings[::4],
                  args.out_dir / "synthetic_goldens.jsonl")
    write_goldens(read(args.synthetic_large), "synthetic (added_token_base 248044)",
                  strings[1::8], args.out_dir / "synthetic_large_goldens.jsonl")
    shutil.copyfile(args.synthetic, args.out_dir / "synthetic_tokenizer.json")


if __name__ == "__main__":
    main()
