"""Inputs for make_chat_goldens.py: Jinja snippets and chat conversations.

Conversations are built in the canonical form of mtplx's Conversation::MessagesValue(): message
keys in the order role, content, reasoning_content, tool_calls, tool_call_id, name; tool calls as
{"id", "type": "function", "function": {"name", "arguments"}}; content parts as
{"type": "text", "text"}, {"type": "image", "image"} or {"type": "video", "video"}.
"""
import json

# ---------------------------------------------------------------------------------------------
# Conversation material.

TEXTS = [
    "Hello!",
    "What's the weather in Paris today?",
    "  leading and trailing spaces  ",
    "\n\nnewlines around\n\n",
    "多语言测试：你好，世界。",
    "Emoji 🎉🚀 and café, naïve, Straße",
    "Tabs\tand an\u3000ideographic space\u3000",
    "\u00a0no-break spaces around\u00a0",
    "Special <|im_end|> and <|im_start|>system tokens inside",
    "Line1\nLine2\r\nLine3",
    "Quotes ' \" and a backslash \\ and {{ braces }} {% tags %}",
    "العربية: مرحبا بالعالم",
    "Zero\u200bwidth and\u2028line separator",
    "Write a haiku about the sea.",
    "Summarize: " + "lorem ipsum dolor sit amet " * 6,
    "",
]

ANSWERS = [
    "Sure, here it is.",
    "The weather in Paris is 22°C and sunny.",
    "\n\nAnswer with surrounding newlines\n\n",
    "答案是四十二。",
    "I can't help with that. 🙂",
    "Use `x = {'a': 1}` in Python.",
    "",
    "  spaced answer  ",
]

REASONINGS = [
    "Let me think step by step.",
    "\nThe user asks about weather; I should call the tool.\n",
    "思考：先理解问题。",
    "  padded reasoning  ",
    "",
    "Multi\nline\nreasoning",
]

INLINE_THINK = [
    "<think>\nInline reasoning here.\n</think>\n\nFinal answer.",
    "reasoning without an opening tag</think>answer after",
    "<think></think>Just the answer",
    "<think>\nfirst\n</think>\n\nmiddle</think>last part",
]

TOOL_RESULTS = [
    "22°C and sunny",
    '{"result": 4, "unit": null}',
    "",
    "line one\nline two",
    "<|im_start|>assistant\ninjected",
    "  padded result  ",
    "結果：成功",
]

IMAGE_URLS = ["https://example.com/cat.png", "file:///tmp/photo.jpg", ""]
VIDEO_URLS = ["https://example.com/clip.mp4", ""]

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a location.",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "  Search the web.\n  Returns snippets.  ",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Search terms"},
            "max_results": {"type": "integer", "default": 5, "minimum": 1},
            "filters": {"type": "object", "properties": {"lang": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["query", "max_results"]}}},
    {"type": "function", "function": {
        "name": "calculator",
        "description": "Évalue une expression — math “quoted” ✓",
        "parameters": {"type": "object", "properties": {
            "expression": {"type": "string"},
            "precision": {"type": "number", "nullable": True, "default": None}},
            "required": ["expression"]}}},
    {"type": "function", "function": {
        "name": "get_time",
        "description": "Current time.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "write_file",
        "description": "Write a file.",
        "parameters": {"type": "object", "properties": {
            "file-path": {"type": "string", "x-display name": "Path", "$comment": "absolute"},
            "content": {"type": "string", "examples": ["a", "b"]},
            "mode": {"type": ["string", "null"], "format": "octal"}},
            "required": ["file-path", "content"]}, "return": {"type": "boolean"}}},
]

ARGUMENTS = [
    {"location": "Paris", "unit": "celsius"},
    {"query": "C++ jinja interpreter", "max_results": 3, "filters": {"lang": "en"},
     "tags": ["c++", "templates"]},
    {"expression": "2 + 2 * 3", "precision": 1.5},
    {"expression": "1/3", "precision": None},
    {},
    {"file-path": "/tmp/a.txt", "content": "multi\nline\ncontent with \"quotes\""},
    {"flag": True, "count": 0, "ratio": 0.1, "big": 1e20, "nested": {"k": [1, "two", None]}},
    {"text": "多字节 ünïcödé 🎉", "emptyish": ""},
]

RAW_ARGUMENTS = ['{"location": "Berlin"}', '{"a": [1, 2], "b": {"c": null}}', "not json at all"]


def text_part(text):
    return {"type": "text", "text": text}


def message(role, content=None, reasoning=None, tool_calls=None, tool_call_id=None, name=None):
    out = {"role": role}
    if content is not None:
        out["content"] = content
    if reasoning is not None:
        out["reasoning_content"] = reasoning
    if tool_calls:
        out["tool_calls"] = tool_calls
    if tool_call_id is not None:
        out["tool_call_id"] = tool_call_id
    if name is not None:
        out["name"] = name
    return out


def tool_call(index, name, arguments):
    return {"id": f"call_{index}", "type": "function",
            "function": {"name": name, "arguments": arguments}}


def options(add_generation_prompt=True, enable_thinking=None, preserve_thinking=None):
    out = {"add_generation_prompt": add_generation_prompt}
    if enable_thinking is not None:
        out["enable_thinking"] = enable_thinking
    if preserve_thinking is not None:
        out["preserve_thinking"] = preserve_thinking
    return out


def chat(messages, tools=None):
    out = {"messages": messages}
    if tools:
        out["tools"] = tools
    return out


def fixed_cases(template):
    """Hand-picked scenarios every template gets."""
    weather = tool_call(0, "get_weather", {"location": "Paris", "unit": "celsius"})
    search = tool_call(1, "search", ARGUMENTS[1])
    cases = [
        (chat([message("user", "Hi")]), options()),
        (chat([message("system", "You are helpful."), message("user", "Hi")]),
         options(enable_thinking=False)),
        (chat([message("system", "Be brief."), message("user", "One"),
               message("assistant", "Two"), message("user", "Three")]), options()),
        (chat([message("user", "Q"), message("assistant", "A", reasoning="R")]),
         options(add_generation_prompt=False)),
        (chat([message("user", "Q1"), message("assistant", "A1", reasoning="old R"),
               message("user", "Q2"), message("assistant", "A2", reasoning="new R")]),
         options(add_generation_prompt=False)),
        (chat([message("user", "Q1"), message("assistant", "A1", reasoning="old R"),
               message("user", "Q2")]), options(preserve_thinking=True)),
        (chat([message("user", "Q1"), message("assistant", "A1", reasoning="old R"),
               message("user", "Q2")]), options(preserve_thinking=False, enable_thinking=True)),
        (chat([message("user", "Q"), message("assistant", INLINE_THINK[0])]),
         options(add_generation_prompt=False)),
        (chat([message("user", "Q"), message("assistant", INLINE_THINK[1]), message("user", "again")]),
         options()),
        (chat([message("system", "Use tools."), message("user", "Weather in Paris?"),
               message("assistant", "", tool_calls=[weather]),
               message("tool", "22°C", tool_call_id="call_0", name="get_weather"),
               message("assistant", "It is 22°C.")], TOOLS[:2]), options()),
        (chat([message("user", "Weather?"),
               message("assistant", "Let me check.", reasoning="Need the tool.",
                       tool_calls=[weather, search]),
               message("tool", "22°C", tool_call_id="call_0"),
               message("tool", '{"hits": 3}', tool_call_id="call_1"),
               message("tool", "third", tool_call_id="call_2")], TOOLS), options()),
        (chat([message("user", "Weather?"),
               message("assistant", "", tool_calls=[tool_call(0, "get_weather", RAW_ARGUMENTS[0])]),
               message("tool", "cold", tool_call_id="call_0")], TOOLS[:1]), options()),
        (chat([message("user", TEXTS[6]), message("assistant", TEXTS[7]),
               message("user", TEXTS[3])]), options(enable_thinking=False)),
        (chat([message("user", "")]), options()),
        (chat([message("user", TEXTS[8])]), options(add_generation_prompt=False)),
        (chat([message("user", "Hi"), message("assistant", "Hello")]),
         options(add_generation_prompt=False)),
        (chat([message("user", "<tool_response>\nresult\n</tool_response>")]), options()),
        (chat([message("system", "S"), message("user", "U"), message("system", "S2"),
               message("user", "U2")]), options()),
        (chat([message("assistant", "only assistant")]), options()),
        (chat([message("user", [text_part("Look: "),
                                 {"type": "image", "image": IMAGE_URLS[0]},
                                 text_part(" and "), {"type": "video", "video": VIDEO_URLS[0]}])]),
         options()),
        (chat([message("system", "Tools available."), message("user", "Find it")], TOOLS),
         options(enable_thinking=False)),
        (chat([message("user", "Write a file"),
               message("assistant", None, tool_calls=[tool_call(0, "write_file", ARGUMENTS[5])]),
               message("tool", "ok", tool_call_id="call_0")], TOOLS[4:]), options()),
        (chat([message("user", "Mixed values"),
               message("assistant", "Calling.", tool_calls=[tool_call(0, "calculator", ARGUMENTS[6])]),
               message("tool", "done", tool_call_id="call_0"),
               message("user", "thanks")], TOOLS[2:3]), options(preserve_thinking=True)),
    ]
    return cases


class Builder:
    """Random conversations for one template (see conversations_for)."""

    def __init__(self, template, rng):
        self.template = template
        self.rng = rng
        self.vision = template in ("qwen3.5-4b", "qwen3.6")
        self.call_index = 0

    def pick(self, items):
        return items[self.rng.randrange(len(items))]

    def user_content(self):
        if self.vision and self.rng.random() < 0.25:
            parts = []
            for _ in range(self.rng.randint(1, 4)):
                roll = self.rng.random()
                if roll < 0.5:
                    parts.append(text_part(self.pick(TEXTS)))
                elif roll < 0.8:
                    parts.append({"type": "image", "image": self.pick(IMAGE_URLS)})
                else:
                    parts.append({"type": "video", "video": self.pick(VIDEO_URLS)})
            return parts
        return self.pick(TEXTS)

    def arguments(self):
        # Only Qwen 3 prints string arguments; the others iterate arguments|items and fail.
        if self.rng.random() < 0.2 and self.template == "qwen3":
            return self.pick(RAW_ARGUMENTS)
        return self.pick(ARGUMENTS)

    def tool_round(self, tools, out):
        calls = []
        for _ in range(self.rng.randint(1, 3)):
            name = self.pick(tools)["function"]["name"]
            calls.append(tool_call(self.call_index, name, self.arguments()))
            self.call_index += 1
        content = self.pick(ANSWERS) if self.rng.random() < 0.5 else None
        if content is None and self.template == "qwen3":
            content = ""  # the Qwen 3 template concatenates content unconditionally
        reasoning = self.pick(REASONINGS) if self.rng.random() < 0.5 else None
        out.append(message("assistant", content, reasoning, tool_calls=calls))
        for call in calls:
            out.append(message("tool", self.pick(TOOL_RESULTS), tool_call_id=call["id"]))

    def assistant(self, out):
        roll = self.rng.random()
        if roll < 0.3:
            out.append(message("assistant", self.pick(ANSWERS), self.pick(REASONINGS)))
        elif roll < 0.45:
            out.append(message("assistant", self.pick(INLINE_THINK)))
        else:
            out.append(message("assistant", self.pick(ANSWERS)))

    def conversation(self):
        tools = None
        if self.rng.random() < 0.4:
            tools = self.rng.sample(TOOLS, self.rng.randint(1, 3))
        messages = []
        if self.rng.random() < 0.5:
            messages.append(message("system", self.pick(TEXTS[:14])))
        turns = self.rng.randint(1, 3)
        for turn in range(turns):
            messages.append(message("user", self.user_content()))
            last = turn == turns - 1
            if last and self.rng.random() < 0.5:
                break
            if tools and self.rng.random() < 0.6:
                self.tool_round(tools, messages)
                if last and self.rng.random() < 0.5:
                    break
            self.assistant(messages)
        opts = options(add_generation_prompt=self.rng.random() < 0.7,
                       enable_thinking=self.pick([None, True, False]),
                       preserve_thinking=self.pick([None, None, True, False]))
        return chat(messages, tools), opts


def conversations_for(template, rng, count):
    cases = fixed_cases(template)
    builder = Builder(template, rng)
    while len(cases) < count:
        cases.append(builder.conversation())
    return cases[:count]


# ---------------------------------------------------------------------------------------------
# Jinja snippets: (template source, context). The context must be JSON.

USERS = [{"name": "ann", "age": 31, "active": True}, {"name": "Bob", "age": 25, "active": False},
         {"name": "cy", "age": 40, "active": True}]
CONTEXT = {"x": "value", "n": 7, "f": 2.5, "l": [1, 2, 3, 4, 5], "s": "héllo🎉",
           "d": {"b": 1, "a": [1, 2], "c": {"k": "é\n"}}, "users": USERS, "none_value": None,
           "empty": "", "zero": 0, "t": True}

SNIPPET_SOURCES = [
    # Whitespace control, trim_blocks and lstrip_blocks.
    "  {% if true %}\n  x\n  {% endif %}\n  y",
    "a  {% if true %}b{% endif %}  \n  {#c#}\nd",
    "{%- if true -%}  x  {%- endif -%}  z",
    "line\n    {{ x }}\n  {{ x }}",
    "{% for i in [1,2] %}\n{{ i }}\n{% endfor %}\nend",
    "  {%+ if true %}x{% endif %}",
    "{% if true +%}\nx{% endif %}",
    "  {{- ' a ' -}}  b",
    "x\n{#- comment -#}\ny",
    "x {# c #}\n y\n{# c2 #}\nz",
    "{% raw %}{{ not parsed }}{% if %}{% endraw %}",
    "  {% raw %}\nraw\n  {% endraw %}\nafter",
    "abc\n",
    "abc\n\n",
    "a\r\nb{% if true %}\r\nc{% endif %}\rd",
    "x\u3000 {%- if true %}y{% endif %}",
    "\t{% if true %}x{% endif %}",
    "a {% if true %}b{% endif %}",
    "{{ 'a' }}  {% if true %}b{% endif %}",
    "{% for i in l %}  {{ i }}\n{% endfor %}",
    "{%- for i in [1, 2] -%}\n  [{{ i }}]\n{%- endfor %}\n",
    "{% if true %}   {% endif %}|",
    "{{ x }}\n{% if true %}\n\n  y\n{% endif %}",
    "a\n  {%- if true %}b{% endif %}",
    "{# a\nmultiline {{ comment }} #}z",
    # Literals and operators.
    "{{ 1 }} {{ 1.5 }} {{ 1e3 }} {{ 1_000 }} {{ 0x1F }} {{ 'a' 'b' }} {{ \"q\" }} {{ none }} "
    "{{ True }} {{ [1, 'a', none] }} {{ {'a': 1, 'b': [2]} }} {{ (1, 2) }} {{ (1,) }} {{ () }}",
    "{{ 'a\\nb' }}|{{ 'tab\\there' }}|{{ '\\u00e9\\x41\\101' }}|{{ 'it\\'s' }}|{{ \"say \\\"hi\\\"\" }}",
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} "
    "{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 / 3 }} {{ 10 / 2 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} "
    "{{ 123456789.123 }} {{ -0.0 }} {{ 3.0 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** 0.5 }}",
    "{{ 'ab' + 'cd' }} {{ 'ab' ~ 1 ~ none ~ u }} {{ 'ab' * 3 }} {{ 2 * 'xy' }} {{ [1] * 2 }} "
    "{{ [1] + [2] }} {{ true + 1 }} {{ -n }} {{ +f }} {{ - -n }}",
    "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' in 'abc' }} {{ 'x' not in ['a'] }} "
    "{{ 'k' in {'k': 1} }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1,2] == [1,2] }} "
    "{{ {'a':1} == {'a':1} }} {{ none == none }} {{ u == u }} {{ 'a' != 'b' }} {{ 2 >= 2.0 }} "
    "{{ 'abc' < 'abd' }} {{ [1, 2] < [1, 3] }} {{ 1 in [1.0] }} {{ none in [none] }}",
    "{{ none_value or 'd' }} {{ 0 and 'x' }} {{ 'a' and 'b' }} {{ not '' }} {{ not not 1 }} "
    "{{ u or 'fallback' }} {{ empty or zero or 'last' }} {{ [] or {} }}",
    "{{ 'y' if true else 'n' }}|{{ 'y' if false }}|{{ 'a' if false else 'b' if true else 'c' }}|"
    "{{ x if x is defined else 'none' }}|{{ u if u is defined else 'none' }}",
    "{{ d.a }} {{ d['a'] }} {{ d.missing }}|{{ l[0] }} {{ l[-1] }} {{ l[5] }}|{{ s[1] }} "
    "{{ s[-1] }} {{ d.c.k }} {{ d['c']['k'] }} {{ users[1].name }} {{ l.0 }}",
    "{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[::2] }} {{ s[::-1] }} {{ s[1:3] }} {{ l[-2:] }} "
    "{{ s[5:1:-1] }} {{ l[10:] }} {{ l[1:-1] }} {{ 'abc'[5:] }}|{{ l[::-2] }}",
    "{{ 'héllo🎉'[1] }} {{ 'héllo🎉'[-1] }} {{ 'héllo🎉'|length }} {{ 'héllo🎉'[::-1] }} "
    "{{ 'héllo🎉'.find('l') }} {{ 'héllo🎉'.upper() }}",
    # String methods.
    "{{ 'a,b,,c'.split(',') }} {{ '  a  b '.split() }} {{ 'a b c'.split(' ', 1) }} "
    "{{ 'a b c'.rsplit(' ', 1) }} {{ '  a b  c  '.rsplit(None, 1) }} {{ '  a b  c  '.split(None, 1) }} "
    "{{ 'x</think>y</think>z'.split('</think>')[-1] }} {{ 'abc'.split('abc') }} {{ ''.split() }} "
    "{{ ''.split(',') }} {{ 'a\\u3000b\\xa0c'.split() }} {{ 'a,b,c'.split(',', maxsplit=1) }}",
    "{{ '  x  '.strip() }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'xxaxx'.strip('x') }}|"
    "{{ '\\u3000x\\xa0\\u2028'.strip() }}|{{ '\\tx '.rstrip() }}|{{ 'abcba'.strip('ab') }}|"
    "{{ '\\u200bx\\u200b'.strip() }}|",
    "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x','c')) }} {{ ''.startswith('') }} "
    "{{ 'abc'.startswith(('z',)) }}",
    "{{ 'hello world'.title() }} {{ 'hELLO wORLD'.capitalize() }} {{ 'aBc'.upper() }} "
    "{{ 'AbC'.lower() }} {{ 'x1y2'.title() }}",
    "{{ 'Straße ÿ ı ſ µ ΣΑΣ Σ αΣ'.upper() }}|{{ 'ÀÉÎ ΣΑΣ ΟΔΥΣΣΕΥΣ Σ. İ Ḁ'.lower() }}|"
    "{{ 'привет мир'|title }}|{{ 'élan vital x1y2'.title() }}|{{ 'ÉCOLE Ŀ'|capitalize }}|"
    "{{ 'ÀB' is upper }} {{ 'àb' is lower }} {{ 'ĀāĂă'.swapcase is defined }} "
    "{{ ['é', 'É', 'a']|sort }} {{ 'Ώρα'.upper() }} {{ 'ΆΈ'.lower() }}",
    "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.partition('x') }} "
    "[{{ 'ab'.center(7, '*') }}][{{ 'ab'.center(6) }}][{{ 'ab'.ljust(4) }}][{{ 'ab'.rjust(4, '.') }}]"
    "[{{ '-42'.zfill(6) }}][{{ 'héllo'.center(9, 'é') }}] {{ 'aBc'.swapcase() }} {{ 'abc'.isascii() }}"
    " {{ 'abcb'.rindex('b') }} {{ 'x'.casefold is defined }}",
    "{{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.replace('', '-') }} {{ 'a.b.c'.replace('.', '') }}",
    "{{ 'abcabc'.find('c') }} {{ 'abc'.find('z') }} {{ 'abcabc'.rfind('b') }} "
    "{{ 'abcabc'.count('b') }} {{ 'abcabc'.find('b', 2) }} {{ 'abc'.index('c') }}",
    "{{ '{} and {}'.format(1, 'x') }} {{ '{0}{1}{0}'.format('a','b') }} "
    "{{ '{name}!'.format(name='N') }} {{ '{{literal}}'.format() }} {{ '{!r}'.format('q') }}",
    "{{ ', '.join(['a', 'b']) }} {{ ''.join('abc') }} {{ '-'.join(d) }}",
    "{{ 'abc'.isdigit() }} {{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' \\n'.isspace() }} "
    "{{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ 'pre_x'.removeprefix('pre_') }} "
    "{{ 'x.txt'.removesuffix('.txt') }} {{ 'a\\nb\\r\\nc'.splitlines() }}",
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys()|list }} "
    "{{ d.values()|list }} {{ d.items()|list }} {{ l.index(3) }} {{ l.count(2) }}",
    # Filters.
    "{{ [3,1,2]|sort }} {{ ['b','A','c']|sort }} {{ ['b','A','c']|sort(case_sensitive=true) }} "
    "{{ [3,1,2]|sort(reverse=true) }} {{ users|sort(attribute='age')|map(attribute='name')|join(',') }} "
    "{{ users|sort(attribute='name')|map(attribute='name')|join(',') }}",
    "{{ [1,2,2,'a','A']|unique|list }} {{ 'abc'|list }} {{ {'a':1}|list }} {{ 'abc'|reverse }} "
    "{{ [1,2]|reverse|list }} {{ ['a','A','b']|unique(case_sensitive=true)|list }}",
    "{{ users|selectattr('active')|map(attribute='name')|list }} "
    "{{ users|rejectattr('active')|list|length }} "
    "{{ users|selectattr('age', 'gt', 30)|map(attribute='name')|join }} "
    "{{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('even')|list }} "
    "{{ [0,1,'',none,'x']|select|list }} {{ ['a','b']|map('upper')|list }} "
    "{{ users|map(attribute='missing', default='d')|list }} "
    "{{ users|selectattr('name', 'equalto', 'Bob')|map(attribute='age')|first }} "
    "{{ ['a', 'bb']|map('length')|list }} {{ [1, 2]|map('string')|join('+') }}",
    "{{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} "
    "{{ none_value|default('d') }} {{ undefined_var|d('z') }} {{ u|default }}|",
    "{{ 'abc'|length }} {{ [1,2]|count }} {{ {'a':1}|length }} {{ u|length }} {{ s|length }}",
    "{{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ []|first }}|{{ 'abc'|first }} {{ 'abc'|last }} "
    "{{ d|first }}",
    "{{ '  x '|trim }}|{{ 'xxax'|trim('x') }}|{{ 'a b'|upper }} {{ 'A B'|lower }} "
    "{{ 'hello-world foo(bar)'|title }} {{ 'hello WORLD'|capitalize }} {{ 5|trim }}",
    "{{ 'a-b-c'|replace('-', '+') }} {{ 'aaa'|replace('a','b',2) }} {{ 123|replace('2', 'x') }}",
    "{{ [1,2,3]|join }} {{ [1,2,3]|join('|') }} {{ users|join(', ', attribute='name') }} "
    "{{ [none, true, 1.5]|join(',') }}",
    "{{ '42'|int }} {{ '42.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ ' 12 '|int }} "
    "{{ '0x1A'|int(0, 16) }} {{ '1_000'|int }} {{ true|int }} {{ none_value|int }} {{ '-5'|int }}",
    "{{ '3.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ '1e3'|float }} {{ ' 2.5 '|float }}",
    "{{ -3|abs }} {{ 2.567|round }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} "
    "{{ 2.561|round(1, 'floor') }} {{ 2.561|round(1, 'ceil') }} {{ 7|round }} {{ -1.5|abs }}",
    "{{ [1,2,3]|sum }} {{ users|sum(attribute='age') }} {{ [1,5,3]|max }} {{ [1,5,3]|min }} "
    "{{ ['b','A']|max }} {{ (users|max(attribute='age')).name }} {{ []|max }}|{{ [0.5, 1]|sum }}",
    "{{ {'b':1,'a':2}|dictsort }} {{ {'b':1,'a':2}|dictsort(by='value') }} "
    "{{ {'b':1,'A':2}|dictsort(reverse=true) }}",
    "{{ {'a':1,'b':[1,2]}|items|list }} {{ u|items|list }}",
    "{{ 'line1\\nline2\\n\\nline4'|indent }}|{{ 'a\\nb'|indent(2, true) }}|"
    "{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb'|indent('> ') }}|{{ ''|indent }}|",
    "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape }}",
    "{{ 'a b  c'|wordcount }} {{ '%s-%s'|format('a', 1) }} {{ '%d%%'|format(5) }}",
    "{{ [1,2,3,4,5]|batch(2)|list }} {{ [1,2,3]|batch(2, 0)|list }}",
    "{{ x|string }} {{ 1|string }} {{ [1,'a']|string }} {{ none_value|string }} {{ d|string }}",
    "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|"
    "{{ 'é\"\\n\\u2028\\t'|tojson }}|{{ 'é'|tojson(ensure_ascii=true) }}|"
    "{{ [1.0, 1e20, none, true, -0.0]|tojson }}|{{ {}|tojson(indent=2) }}|{{ [[]]|tojson(indent=2) }}|"
    "{{ d|tojson(separators=(',', ':')) }}|{{ '\\x7f\\x00\\x1f'|tojson }}|"
    "{{ '🎉'|tojson(ensure_ascii=true) }}|{{ d|tojson(indent='\\t') }}|{{ l|tojson(indent=0) }}",
    "{{ users|tojson }}|{{ 'x'|safe }} {{ [1]|safe }} {{ 3|tojson }} {{ 1.5|tojson }}",
    "{{ {'k': 'é\\n', 'q': \"it's\", 'z': 'both \\' \"'} }} {{ ['\\x85', '\\xa0', '\\u200b', '\\U0001F600', '\\t'] }}",
    # Tests.
    "{{ x is defined }} {{ u is defined }} {{ u is undefined }} {{ none_value is none }} "
    "{{ 'a' is string }} {{ 1 is string }} {{ {} is mapping }} {{ [] is mapping }} "
    "{{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ u is iterable }} "
    "{{ {} is sequence }} {{ 'a' is sequence }} {{ 1 is sequence }} {{ u is sequence }}",
    "{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 'a' is number }} "
    "{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} "
    "{{ false is false }} {{ 0 is false }} {{ 1 is integer }} {{ true is integer }} "
    "{{ 1.0 is float }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} "
    "{{ 9 is divisibleby(4) }}",
    "{{ 'a' is eq 'a' }} {{ 'a' is equalto('b') }} {{ 1 is ne 2 }} {{ 2 is gt 1 }} "
    "{{ 2 is ge 2 }} {{ 1 is lt 2 }} {{ 1 is le 0 }} {{ 'a' is in ['a'] }} {{ 'abc' is lower }} "
    "{{ 'ABC' is upper }} {{ none_value is sameas none }} {{ 'upper' is filter }} "
    "{{ 'odd' is test }} {{ 'nope' is filter }} {{ x is not none }} {{ u is not defined }} "
    "{{ range is callable }} {{ x is callable }} {{ 5 is greaterthan 2 }} {{ t is sameas true }}",
    # Statements.
    "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
    "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}"
    "{{ loop.nextitem }}|{% endfor %}",
    "{% for x in [1,2,3] %}{{ loop.cycle('odd', 'even') }} {% endfor %}",
    "{% for x in [] %}a{% else %}E{% endfor %}{% for x in u %}a{% else %}U{% endfor %}",
    "{% for x in l if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|"
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}|{% for c in 'ab' %}{{ c }}.{% endfor %}",
    "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}"
    "{{ loop.index }}|{% endfor %}",
    "{% for i in range(10) %}{% if i == 5 %}{% break %}{% endif %}{% if i is odd %}{% continue %}"
    "{% endif %}{{ i }}{% endfor %}",
    "{{ range(5)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }}",
    "{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}"
    "{% if u %}t{% else %}f{% endif %}{% if l %}L{% endif %}",
    "{% for i in [1,2] %}{% if i == 2 %}[{{ v }}]{% endif %}{% set v = i %}{% endfor %}[{{ v }}]",
    "{% set v = 5 %}{% for i in [1,2] %}[{{ v }}]{% set v = i %}{% endfor %}{{ v }}",
    "{% if true %}{% set w = 3 %}{% endif %}{{ w }}",
    "{% set ns = namespace(a=0, b='x') %}{% for i in range(3) %}{% set ns.a = ns.a + i %}"
    "{% endfor %}{{ ns.a }}{{ ns.b }}{{ ns.missing }}|",
    "{% set ns = namespace({'k': 1}, j=2) %}{{ ns.k }}{{ ns.j }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, e = [3, 4] %}{{ c }}{{ e }}{% set t2 = 1, 2 %}"
    "{{ t2 }}",
    "{% set blk %}hello {{ 'w' }}{% endset %}[{{ blk }}]{% set up | upper %}abc{% endset %}{{ up }}",
    "{% macro m(a, b=2, c=a) %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }} {{ m(1, 3) }} "
    "{{ m(1, c=9) }} {{ m() }}|",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}",
    "{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, 2, k=3) }}",
    "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
    "{% call wrap('b') %}inner{% endcall %}",
    "{% macro m() %}{{ caller(1, 2) }}{% endmacro %}{% call(a, b) m() %}{{ a + b }}{% endcall %}",
    "{% macro m() %}\n  text  \n{% endmacro %}[{{ m()|trim }}][{{ m() }}]",
    "{% macro late() %}{{ y }}{% endmacro %}{% set y = 3 %}{{ late() }}",
    "{% filter upper %}abc {{ 'd' }}{% endfilter %}{% filter replace('a', 'b')|upper %}aa"
    "{% endfilter %}",
    "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]",
    "{% generation %}gen{{ 1 }}{% endgeneration %}",
    "{{ {'a': 1, 'a': 2} }} {{ dict(a=1, b='x') }} {{ dict({'z': 1}) }}",
    "{% print 'p', 1 %}|{{ 1, 2 }}",
    "{% set m = {0: 'zero', 512: 'a', none: 'n', 2.5: 'f'} %}{{ m[0] }}{{ m[512] }}{{ m[none] }}"
    "{{ m[2.5] }}{{ m[1] }}|{{ m }} {{ m|tojson }} {{ 512 in m }} {{ 3 in m }} {{ m.items()|list }} "
    "{{ m|list }} {{ m.get(0) }} {{ dict([[1, 'x'], ['k', 2]]) }}",
    "{{ strftime_now('%Y') is string }} {{ raise_exception is defined }} {{ namespace is callable }}",
    "{% for m in users %}{% if loop.previtem and loop.previtem.active %}after-active {% endif %}"
    "{% if not loop.last and loop.nextitem.age > 30 %}next-old {% endif %}{% endfor %}",
    "{% set ns = namespace(items=[]) %}{% for i in range(3) %}{% set ns.items = ns.items + [i] %}"
    "{% endfor %}{{ ns.items }}",
    "{{ (d.items() | list)[0][0] }}",
    # Errors.
    "{{ u.x }}",
    "{{ 'a' + 1 }}",
    "{{ 1 / 0 }}",
    "{{ raise_exception('boom: ' ~ n) }}",
    "{% if n == 7 %}{{ raise_exception('seven') }}{% endif %}",
    "{{ d.update({}) }}",
    "{{ 'a' < 1 }}",
    "{% for a, b in [1] %}{% endfor %}",
    "{{ none_value + 1 }}",
    "{{ range(200000)|length }}",
    "{{ u() }}",
    "{{ n() }}",
    "{{ u|tojson }}",
    "{{ 'x' * 'y' }}",
    "{{ [1] + (2,) }}",
    "{{ l.append(1) }}",
    "{% set ns = namespace(_x=1) %}",
    "{% set ns = namespace() %}{% set ns._y = 1 %}",
    "{% set x.y = 1 %}",
    "{{ 'abc'.split('') }}",
    "{{ u + 'a' }}",
    "{{ -'a' }}",
    "{{ 1|nope }}",
    "{{ 1 is nope }}",
    # Syntax errors.
    "{% if %}x{% endif %}",
    "{{ 1 + }}",
    "{% for x in %}{% endfor %}",
    "{% endif %}",
    "{{ 'unterminated }}",
    "{% if true %}no end",
    "{{ a b }}",
    "{% unknowntag %}",
    "{{ }}",
    "{% for x in l %}{% endif %}",
    "{{ (1 }}",
    "{{ 1 ]}}",
    "{% set = 1 %}",
    "{% macro m(a=1, b) %}{% endmacro %}",
    "{{ x is is string }}",
    "{% break %}",
    "{# unclosed comment",
    "line1\nline2 {{ 1 +* 2 }}",
    "{% include 'other.html' %}",
    "{{ 1 !  2 }}",
]


def _snippets():
    out = [(source, CONTEXT) for source in SNIPPET_SOURCES]
    # Context values that need their own shapes.
    out.append(("{{ messages[0]['content'] }}|{{ messages|length }}|{{ messages[-1].role }}",
                {"messages": [{"role": "user", "content": "hi"},
                              {"role": "assistant", "content": None}]}))
    out.append(("{{ x }} {{ y }} {{ z }} {{ w }}", {"x": 1.0, "y": 1e100, "z": -2.5e-7, "w": 10**18}))
    out.append(("{{ big|tojson }} {{ big }}", {"big": 123456789012345678}))
    out.append(("{% for k, v in args|items %}<{{ k }}>{{ v|tojson if v is mapping or "
                "(v is sequence and v is not string) else v|string }}</{{ k }}>{% endfor %}",
                {"args": {"b": [1, {"x": None}], "a": "plain", "c": {"d": True}, "e": 0.5,
                          "f": None, "g": False}}))
    out.append(("{{ tools|tojson }}", {"tools": json.loads(json.dumps([{"name": "é", "v": [1, 2.0]}]))}))
    return out


SNIPPETS = _snippets()
