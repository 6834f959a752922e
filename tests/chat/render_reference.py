#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2 exactly as Hugging Face
transformers does (utils/chat_template_utils.py): the reference that Quill's
C++ template engine is compared with byte for byte.

Reads one JSON request on stdin:
  {"template": "<path to a .jinja file>",
   "cases": [{"messages": [...], "tools": [...] or null,
              "add_generation_prompt": bool, "bos_token": str, "eos_token": str,
              "extra": {name: value, ...}, "now": seconds since the epoch}, ...]}
and writes one JSON object: {"results": [{"ok": true, "text": str} or
{"ok": false, "error": str, "type": exception class name}, ...]}.
strftime_now reads `now` in UTC, so both sides agree on the date.
Exits 2 (with a message on stderr) when jinja2 is missing.
"""
import json
import sys
from datetime import datetime, timezone

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError as e:
    print(f"render_reference: jinja2 is missing ({e})", file=sys.stderr)
    sys.exit(2)


class AssistantTracker(Extension):
    """HF's {% generation %} tag: renders its body (the tracking of which
    characters the assistant wrote is not needed here)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(
            lineno
        )

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(
            x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def strftime_now(format):
        return datetime.fromtimestamp(now, timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(source, case):
    env = environment(case.get("now", 0))
    try:
        template = env.from_string(source)
        text = template.render(
            messages=case["messages"],
            tools=case.get("tools"),
            documents=None,
            add_generation_prompt=case.get("add_generation_prompt", True),
            bos_token=case.get("bos_token", ""),
            eos_token=case.get("eos_token", ""),
            **case.get("extra", {}),
        )
        return {"ok": True, "text": text}
    except Exception as e:  # every failure is a result to compare
        return {"ok": False, "error": str(e), "type": type(e).__name__}


def main():
    request = json.load(sys.stdin)
    with open(request["template"], encoding="utf-8", newline="") as f:
        source = f.read()
    results = [render(source, case) for case in request["cases"]]
    json.dump({"results": results}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
