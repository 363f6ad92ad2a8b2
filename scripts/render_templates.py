#!/usr/bin/env python3
"""Reference renderings of real chat templates, made by Python's jinja2 in the
settings of Hugging Face transformers' `apply_chat_template`, for the Rust
tests of the agent-chat crate (tests/chat/templates.rs) to compare byte for byte.

Regenerate (needs only jinja2, never the network; run it again after changing
a template, a conversation below or the adaptation rules, then run the
crate's tests):

    python3 -m venv ~/.cache/agent/venv-templates
    ~/.cache/agent/venv-templates/bin/pip install jinja2
    ~/.cache/agent/venv-templates/bin/python scripts/render_templates.py

Arguments: `--templates DIR` (default: the crate's tests/fixtures/templates,
found from the crate's scripts/ or the repository's scripts/ folder, the
*.jinja files) and `--out DIR` (default: that tests/fixtures). It writes:

    conversations/NAME.json          the canonical conversations (messages + tools)
    expected/TEMPLATE/capabilities.json   what the probes found
    expected/TEMPLATE/CASE.adapted.json   the messages and tools after adaptation
    expected/TEMPLATE/CASE.txt            the rendered prompt
    expected/TEMPLATE/CASE.error.txt      instead of .txt: the template refuses
                                          the case (each one justified below)
    cases.json                       one entry per (template, case)

The renderer is transformers' `_compile_jinja_template` rebuilt: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the
loopcontrols extension and the `{% generation %}` tag; `tojson` is
`json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)`;
`raise_exception` raises; `strftime_now` formats a fixed moment
(2025-03-14 09:26:53) so the output is reproducible. The variables are
`messages`, `tools` (None without tools), `documents` (None),
`add_generation_prompt`, `bos_token`, `eos_token` and the case's kwargs.
Every object keeps its keys in the order it was written (Python dicts, as
transformers passes them): the agent's serde_json maps keep insertion order
too (`preserve_order`), so a template that prints or iterates an object sees
the same order in both.
Two deliberate departures, both what llama.cpp's engine does too:
- `tojson` turns generators into lists (llama-cpp-deepseek-r1.jinja pipes
  `tools | map(...)` into it, which stock jinja2 cannot serialize);
- where jinja2 raises because the template iterates `tools` while it is
  None (Hermes 3's tool-use template), the render is retried with
  `tools=[]`, since minijinja iterates none as empty.

The message adaptation is implemented here independently of the Rust code
(src/adapt.rs), from the same rules:
- probes: small conversations with marker texts, each rendered without a
  generation prompt; a capability holds when its marker shows up:
  system role; tools; a calls-only assistant message, trying content None
  then "", arguments as an object then as JSON text (json.dumps), with the
  call id "call1abcd"; two calls in one message; the id "call_1" (refused
  by templates that need nine-character ids); a tool result that renders,
  and renders differently from the same message with a made-up role (a
  template that prints any role name has no tool role); two user messages
  in a row (refused: strict alternation); reasoning under
  `reasoning_content`, `thinking` or `tool_plan`.
- adaptation, in order: where only one call per message renders, each call
  becomes its own message followed by its result; ids become nine
  alphanumerics where required (kept if they are, else FNV-1a 64 of the id
  in base 62, least significant digit first, alphabet 0-9a-zA-Z);
  arguments become json.dumps text where required; a calls-only message
  has content None where allowed, else ""; reasoning goes under the field
  the template reads, else is dropped; where `tool_calls` does not render,
  the calls are written into the content in the family's own syntax; where
  there is no tool role, results become user messages
  "Tool result (NAME):\\n..."; where `tools` does not render, the tools are
  described in the system message (arguments in the schema's order, the
  order the call grammar asks for) ending with an example call in the
  family's syntax; without a system role, the system text opens the first
  user message (joined by a blank line); with strict alternation,
  consecutive messages of one role (without calls) are joined by a blank
  line.
"""

import argparse
import datetime
import json
import pathlib
import sys
import types

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2025, 3, 14, 9, 26, 53)

# ---------------------------------------------------------------- rendering


class AssistantTracker(Extension):
    """transformers' `{% generation %}` tag, which renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def listify(x):
    if isinstance(x, (types.GeneratorType, map, filter)):
        return [listify(v) for v in x]
    if isinstance(x, (list, tuple)):
        return [listify(v) for v in x]
    if isinstance(x, dict):
        return {k: listify(v) for k, v in x.items()}
    return x


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(listify(x), ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


class Renderer:
    def __init__(self, source, bos, eos):
        self.template = compile_template(source)
        self.bos, self.eos = bos, eos

    def __call__(self, messages, tools=None, add_generation_prompt=False, **kwargs):
        def go(tools):
            return self.template.render(
                messages=messages, tools=tools, documents=None,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos, eos_token=self.eos, **kwargs)
        try:
            return go(tools)
        except TypeError as e:
            if tools is None and "NoneType" in str(e) and "iterable" in str(e):
                return go([])
            raise


# ------------------------------------------------------------------ families


def detect_family(source):
    has = source.__contains__
    if has("<|channel|>"):
        return "gpt-oss"
    if has("<｜tool▁calls▁begin｜>"):
        return "deepseek-r1" if has("```json") else "deepseek-v3.1"
    if has("<|START_ACTION|>"):
        return "command-r7b"
    if has("<|tool_call|>"):
        return "granite"
    if has("<function=") and has("<parameter="):
        return "qwen3-coder"
    if has("<tool_call>"):
        return "hermes"
    if has("[TOOL_CALLS]"):
        if has("[CALL_ID]"):
            return "mistral-call-id"
        if has("[ARGS]"):
            return "mistral-args"
        return "mistral-nemo"
    if has("<|start_header_id|>ipython<|end_header_id|>") or has("<|python_tag|>"):
        return "llama3"
    return "generic"


def dumps(x):
    return json.dumps(x, ensure_ascii=False)


def format_calls(family, calls):
    """Calls as the family's model writes them (name, arguments, id)."""
    def a(c):
        return dumps(c["arguments"])

    def n(c):
        return dumps(c["name"])
    if family == "hermes":
        return "\n".join(f'<tool_call>\n{{"name": {n(c)}, "arguments": {a(c)}}}\n</tool_call>' for c in calls)
    if family == "qwen3-coder":
        def params(c):
            return "".join(f"<parameter={k}>\n{v if isinstance(v, str) else dumps(v)}\n</parameter>\n"
                           for k, v in c["arguments"].items())
        return "\n".join(f'<tool_call>\n<function={c["name"]}>\n{params(c)}</function>\n</tool_call>' for c in calls)
    if family == "llama3":
        return "\n".join(f'{{"name": {n(c)}, "parameters": {a(c)}}}' for c in calls)
    if family == "mistral-nemo":
        return "[TOOL_CALLS][" + ", ".join(
            f'{{"name": {n(c)}, "arguments": {a(c)}, "id": {dumps(c["id"])}}}' for c in calls) + "]"
    if family == "mistral-args":
        return "".join(f'[TOOL_CALLS]{c["name"]}[ARGS]{a(c)}' for c in calls)
    if family == "mistral-call-id":
        return "".join(f'[TOOL_CALLS]{c["name"]}[CALL_ID]{c["id"]}[ARGS]{a(c)}' for c in calls)
    if family == "deepseek-r1":
        return "<｜tool▁calls▁begin｜>" + "\n".join(
            f'<｜tool▁call▁begin｜>function<｜tool▁sep｜>{c["name"]}\n```json\n{a(c)}\n```<｜tool▁call▁end｜>'
            for c in calls) + "<｜tool▁calls▁end｜>"
    if family == "deepseek-v3.1":
        return "<｜tool▁calls▁begin｜>" + "".join(
            f'<｜tool▁call▁begin｜>{c["name"]}<｜tool▁sep｜>{a(c)}<｜tool▁call▁end｜>' for c in calls
        ) + "<｜tool▁calls▁end｜>"
    if family == "gpt-oss":
        return "<|call|><|start|>assistant".join(
            f'<|channel|>commentary to=functions.{c["name"]} <|constrain|>json<|message|>{a(c)}' for c in calls)
    if family == "command-r7b":
        return "<|START_ACTION|>[" + ", ".join(
            f'{{"tool_call_id": "{i}", "tool_name": {n(c)}, "parameters": {a(c)}}}'
            for i, c in enumerate(calls)) + "]<|END_ACTION|>"
    if family == "granite":
        return "<|tool_call|>[" + ", ".join(
            f'{{"name": {n(c)}, "arguments": {a(c)}}}' for c in calls) + "]"
    assert family == "generic", family
    return "\n".join(f'{{"tool": {n(c)}, "args": {a(c)}}}' for c in calls)


def thinking_kwargs(source, on):
    """The template's reasoning switch set to `on`, as render kwargs."""
    if "enable_thinking" in source:
        return {"enable_thinking": on}
    if "reasoning_effort" in source:
        return {} if on else {"reasoning_effort": "low"}
    if any(u in source for u in ["thinking is defined", "if thinking", "and thinking", "not thinking"]):
        return {"thinking": on}
    return None


# -------------------------------------------------------------------- probes

PROBE_ID = "call1abcd"


def probe(render):
    def shows(messages, needle, tools=None):
        try:
            return needle in render(messages, tools)
        except Exception:
            return False

    user = {"role": "user", "content": "Hey"}
    caps = {}
    caps["system_role"] = shows([{"role": "system", "content": "system_needle"}, user], "system_needle")
    tool = [{"type": "function", "function": {
        "name": "tool_needle", "description": "A probe.",
        "parameters": {"type": "object",
                       "properties": {"argument_needle": {"type": "string", "description": "A probe."}},
                       "required": ["argument_needle"]}}}]
    caps["tools"] = shows([user], "tool_needle", tool)

    def call(id_, value, string_args):
        args = {"argument_needle": value}
        return {"id": id_, "type": "function",
                "function": {"name": "tool_needle", "arguments": dumps(args) if string_args else args}}

    def calls_message(content, calls):
        return {"role": "assistant", "content": content, "tool_calls": calls}

    def result(id_):
        return {"role": "tool", "tool_call_id": id_, "name": "tool_needle", "content": "response_needle"}

    # Calls are probed as they occur: followed by their results.
    form = None
    for null_content, string_args in [(True, False), (True, True), (False, False), (False, True)]:
        content = None if null_content else ""
        message = calls_message(content, [call(PROBE_ID, "value_needle", string_args)])
        if shows([user, message, result(PROBE_ID)], "value_needle"):
            form = (null_content, string_args)
            break
    caps["tool_calls"] = form is not None
    caps["null_call_content"], caps["string_arguments"] = form or (False, False)
    content = None if caps["null_call_content"] else ""
    sa = caps["string_arguments"]

    caps["parallel_tool_calls"] = caps["nine_char_ids"] = False
    if caps["tool_calls"]:
        two = calls_message(content, [call(PROBE_ID, "first_needle", sa), call("call2abcd", "second_needle", sa)])
        try:
            out = render([user, two, result(PROBE_ID), result("call2abcd")])
            caps["parallel_tool_calls"] = "first_needle" in out and "second_needle" in out
        except Exception:
            pass
        short = calls_message(content, [call("call_1", "value_needle", sa)])
        caps["nine_char_ids"] = not shows([user, short, result("call_1")], "value_needle")

    if caps["tool_calls"]:
        before = calls_message(content, [call(PROBE_ID, "value_needle", sa)])
    else:
        before = {"role": "assistant", "content": "Calling the tool."}

    def with_role(role):
        try:
            msg = {"role": role, "tool_call_id": PROBE_ID, "content": "response_needle"}
            return render([user, before, msg]).replace(role, "tool")
        except Exception:
            return None
    as_tool, as_made_up = with_role("tool"), with_role("made_up_role")
    has_tool_role = as_tool is not None and as_tool != as_made_up
    caps["tool_responses"] = shows([user, before, result(PROBE_ID)], "response_needle") and has_tool_role

    try:
        render([user, {"role": "user", "content": "Hey again"}])
        caps["strict_alternation"] = False
    except Exception:
        caps["strict_alternation"] = True

    caps["reasoning_field"] = None
    for field in ["reasoning_content", "thinking", "tool_plan"]:
        if shows([user, dict(before, **{field: "reasoning_needle"}), result(PROBE_ID)], "reasoning_needle"):
            caps["reasoning_field"] = field
            break
    return caps


# ---------------------------------------------------------------- adaptation


def nine_char_id(id_):
    if len(id_) == 9 and id_.isascii() and id_.isalnum():
        return id_
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    h = 0xcbf29ce484222325
    for b in id_.encode():
        h ^= b
        h = (h * 0x100000001b3) % (1 << 64)
    out = ""
    for _ in range(9):
        out += alphabet[h % 62]
        h //= 62
    return out


def signature(schema):
    """The arguments in the schema's order (as written), the order the call
    grammar asks for; `?` marks the optional ones."""
    props = schema.get("properties", {})
    required = schema.get("required", [])
    parts = []
    for name in props:
        t = props[name].get("type")
        t = t if isinstance(t, str) else " | ".join(t) if isinstance(t, list) else "any"
        parts.append(f'{dumps(name)}{"" if name in required else "?"}: {t}')
    return "{" + ", ".join(parts) + "}"


def describe_tools(tools, family):
    out = "# Tools\n\nYou can call these tools:\n"
    for t in tools:
        f = t["function"]
        out += f'- {f["name"]}: {f["description"]}\n  arguments: {signature(f["parameters"])}\n'
    example = {"id": "abcDEF123", "name": "tool_name", "arguments": {"argument_name": "value"}}
    return out + "\nTo call a tool, write:\n" + format_calls(family, [example])


def one_call_per_message(messages):
    out, i = [], 0
    while i < len(messages):
        m = messages[i]
        i += 1
        calls = m.get("tool_calls") or []
        if m["role"] != "assistant" or len(calls) < 2:
            out.append(m)
            continue
        results = []
        while i < len(messages) and messages[i]["role"] == "tool":
            results.append(messages[i])
            i += 1
        for n, c in enumerate(calls):
            single = dict(m) if n == 0 else {"role": "assistant", "content": ""}
            single["tool_calls"] = [c]
            out.append(single)
            match = [r for r in results if r.get("tool_call_id") == c["id"]]
            if match:
                results.remove(match[0])
                out.append(match[0])
        out.extend(results)
    return out


def adapt(messages, tools, caps, family):
    if caps["tool_calls"] and not caps["parallel_tool_calls"]:
        messages = one_call_per_message(messages)
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls", [])}

    def map_id(i):
        return nine_char_id(i) if caps["nine_char_ids"] else i

    out = []
    for m in messages:
        role = m["role"]
        if role in ("system", "user"):
            out.append({"role": role, "content": m["content"]})
        elif role == "tool":
            name = m.get("name") or names.get(m.get("tool_call_id"))
            if not caps["tool_responses"]:
                header = f"Tool result ({name}):" if name else "Tool result:"
                out.append({"role": "user", "content": header + "\n" + m["content"]})
                continue
            t = {"role": "tool"}
            if "tool_call_id" in m:
                t["tool_call_id"] = map_id(m["tool_call_id"])
            if name:
                t["name"] = name
            t["content"] = m["content"]
            out.append(t)
        else:
            calls = [{"id": map_id(c["id"]), "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in m.get("tool_calls", [])]
            text = m.get("content") or ""
            a = {"role": "assistant"}
            if not calls:
                a["content"] = text
            elif not caps["tool_calls"]:
                written = format_calls(family, calls)
                a["content"] = written if not text else text + "\n" + written
            elif not text and caps["null_call_content"]:
                a["content"] = None
            else:
                a["content"] = text
            if caps["reasoning_field"] and m.get("reasoning_content"):
                a[caps["reasoning_field"]] = m["reasoning_content"]
            if caps["tool_calls"] and calls:
                a["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                    "name": c["name"],
                    "arguments": dumps(c["arguments"]) if caps["string_arguments"] else c["arguments"]}}
                    for c in calls]
            out.append(a)

    tools_arg = tools or None
    if tools and not caps["tools"]:
        text = describe_tools(tools, family)
        if out and out[0]["role"] == "system":
            out[0]["content"] += "\n\n" + text
        else:
            out.insert(0, {"role": "system", "content": text})
        tools_arg = None

    if not caps["system_role"]:
        folded, pending = [], None
        for i, m in enumerate(out):
            if m["role"] == "system":
                if i == 0:
                    pending = m["content"]
                    continue
                m["role"] = "user"
            if m["role"] == "user" and pending is not None:
                m["content"] = pending + "\n\n" + m["content"]
                pending = None
            folded.append(m)
        if pending is not None:
            folded.insert(0, {"role": "user", "content": pending})
        out = folded

    if caps["strict_alternation"]:
        merged = []
        for m in out:
            def mergeable(x):
                return "tool_calls" not in x and x["role"] != "tool" and isinstance(x["content"], str)
            if merged and merged[-1]["role"] == m["role"] and mergeable(merged[-1]) and mergeable(m):
                merged[-1]["content"] += "\n\n" + m["content"]
            else:
                merged.append(m)
        out = merged
    return out, tools_arg


# ------------------------------------------------------------- the fixtures

TOOLS = [
    {"type": "function", "function": {
        "name": "read_file",
        "description": "Read a text file in the workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "start_line": {"type": "integer", "description": "First line to show (1-based)."}},
            "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "grep",
        "description": "Search files for a regular expression.",
        "parameters": {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "The regular expression."},
            "path": {"type": "string", "description": "Folder or file to search; the whole workspace by default."}},
            "required": ["pattern"]}}},
]

SYSTEM = {"role": "system", "content": "You are a coding agent. Answer briefly."}


def call(id_, name, arguments):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATIONS = {
    # A system prompt, tools, a request, a call, its result, the generation prompt.
    "tool_call": {"tools": TOOLS, "messages": [
        SYSTEM,
        {"role": "user", "content": "Where is the KV cache trimmed? Look in src/llm/engine.rs."},
        {"role": "assistant", "content": "",
         "tool_calls": [call("call_1", "read_file", {"path": "src/llm/engine.rs", "start_line": 340})]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file",
         "content": "fn reuse_prefix(&mut self) {\n    // trims the \"cache\" — café\n}"},
    ]},
    # An earlier turn that carried reasoning, then its answer and a new request.
    "reasoning": {"tools": TOOLS, "messages": [
        SYSTEM,
        {"role": "user", "content": "Find where the prompt is rendered."},
        {"role": "assistant", "content": "",
         "reasoning_content": "The user wants the render function. I should grep for it.",
         "tool_calls": [call("call_1", "grep", {"pattern": "fn render", "path": "src"})]},
        {"role": "tool", "tool_call_id": "call_1", "name": "grep",
         "content": "src/llm/engine.rs:348:    pub fn render(&self, messages: &[Message]) -> String {"},
        {"role": "assistant", "content": "In `LlamaEngine::render`, src/llm/engine.rs line 348.",
         "reasoning_content": "Found it in engine.rs."},
        {"role": "user", "content": "Thanks. And where are grammars built?"},
    ]},
    # Two calls in one turn, then both results.
    "parallel_calls": {"tools": TOOLS, "messages": [
        SYSTEM,
        {"role": "user", "content": "Compare src/main.rs and src/lib.rs."},
        {"role": "assistant", "content": "",
         "tool_calls": [call("call_1", "read_file", {"path": "src/main.rs"}),
                        call("call_2", "read_file", {"path": "src/lib.rs"})]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "fn main() {}"},
        {"role": "tool", "tool_call_id": "call_2", "name": "read_file", "content": "pub mod llm;"},
    ]},
    # Plain chat: no tools at all.
    "no_tools": {"tools": [], "messages": [
        SYSTEM,
        {"role": "user", "content": "Explain Rust lifetimes in one sentence."},
    ]},
}

# bos_token and eos_token as each model's GGUF vocabulary has them.
SPECIAL_TOKENS = [
    ("Qwen", "", "<|im_end|>"),
    ("qwen2.5", "", "<|im_end|>"),
    ("Hermes", "<|begin_of_text|>", "<|im_end|>"),
    ("Llama-3", "<|begin_of_text|>", "<|eot_id|>"),
    ("istral", "<s>", "</s>"),
    ("Devstral", "<s>", "</s>"),
    ("deepseek", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("gemma", "<bos>", "<eos>"),
    ("granite", "", "<|end_of_text|>"),
    ("Phi", "<s>", "<|endoftext|>"),
    ("command-r", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("gpt-oss", "<|startoftext|>", "<|return|>"),
]

# Cases a template refuses even after adaptation, and why that is right.
EXPECTED_ERRORS = {
}


def special_tokens(name):
    for key, bos, eos in SPECIAL_TOKENS:
        if key.lower() in name.lower():
            return bos, eos
    raise SystemExit(f"no bos/eos known for {name}: add it to SPECIAL_TOKENS")


def main():
    # The script sits in the crate's scripts/ or in the repository's
    # scripts/ (then the crate is crates/agent-chat).
    root = pathlib.Path(__file__).resolve().parent.parent
    fixtures = next((d for d in [root / "tests/fixtures", root / "crates/agent-chat/tests/fixtures"]
                     if (d / "templates").is_dir()), root / "tests/fixtures")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--templates", type=pathlib.Path, default=fixtures / "templates")
    parser.add_argument("--out", type=pathlib.Path, default=fixtures)
    args = parser.parse_args()

    (args.out / "conversations").mkdir(parents=True, exist_ok=True)
    for name, conv in CONVERSATIONS.items():
        (args.out / "conversations" / f"{name}.json").write_text(
            json.dumps(conv, ensure_ascii=False, indent=2) + "\n")

    cases, unexpected = [], []
    for path in sorted(args.templates.glob("*.jinja")):
        source = path.read_text()
        stem = path.name[: -len(".jinja")]
        bos, eos = special_tokens(stem)
        render = Renderer(source, bos, eos)
        family = detect_family(source)
        caps = probe(render)
        out_dir = args.out / "expected" / stem
        out_dir.mkdir(parents=True, exist_ok=True)
        for old in out_dir.glob("*"):
            old.unlink()
        (out_dir / "capabilities.json").write_text(
            json.dumps(dict(caps, family=family), indent=2) + "\n")

        runs = [(name, name, None) for name in CONVERSATIONS]
        for on in (True, False):
            if thinking_kwargs(source, on) is not None:
                runs.append((f"thinking_{'on' if on else 'off'}", "tool_call", on))
        for case, conv_name, thinking in runs:
            conv = CONVERSATIONS[conv_name]
            messages, tools = adapt(json.loads(json.dumps(conv["messages"])), conv["tools"], caps, family)
            kwargs = thinking_kwargs(source, thinking) if thinking is not None else {}
            (out_dir / f"{case}.adapted.json").write_text(
                json.dumps({"messages": messages, "tools": tools}, ensure_ascii=False, indent=2) + "\n")
            entry = {"template": path.name, "case": case, "conversation": conv_name,
                     "thinking": thinking, "bos_token": bos, "eos_token": eos,
                     "adapted": f"expected/{stem}/{case}.adapted.json"}
            try:
                text = render(messages, tools, add_generation_prompt=True, **kwargs)
                (out_dir / f"{case}.txt").write_text(text)
                entry["expected"] = f"expected/{stem}/{case}.txt"
            except Exception as e:
                why = EXPECTED_ERRORS.get((path.name, case))
                if why is None:
                    unexpected.append(f"{path.name} / {case}: {type(e).__name__}: {e}")
                (out_dir / f"{case}.error.txt").write_text(f"{e}\n")
                entry["error"] = f"expected/{stem}/{case}.error.txt"
                entry["why"] = why
            cases.append(entry)
        print(f"{path.name}: {family}, " + ", ".join(k for k, v in caps.items() if v is True))

    (args.out / "cases.json").write_text(json.dumps(cases, ensure_ascii=False, indent=2) + "\n")
    print(f"{len(cases)} cases written to {args.out}")
    if unexpected:
        print("unexpected template errors (justify them in EXPECTED_ERRORS or fix the adaptation):")
        print("\n".join("  " + u for u in unexpected))
        sys.exit(1)


if __name__ == "__main__":
    main()
