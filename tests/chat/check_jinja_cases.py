#!/usr/bin/env python3
"""Re-derives the expected strings of tests/unit/Jinja*Test.cpp from Python's
jinja2 in HF's environment (render_reference.py): every
{R"J(template)J", R"J(variables)J", "expected"} case is rendered and compared.
Run after editing a case; prints each mismatch and exits 1 if any."""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from render_reference import environment  # noqa: E402

CASE = re.compile(
    r'\{R"J\((.*?)\)J",\s*R"J\((.*?)\)J",\s*(R"J\((.*?)\)J"|"((?:[^"\\]|\\.)*)")\}', re.S)


def c_string(body):
    return bytes(body, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def main():
    failures = total = 0
    for path in sys.argv[1:] or sorted(Path(__file__).parent.parent.glob("unit/Jinja*Test.cpp")):
        text = Path(path).read_text(encoding="utf-8")
        for m in CASE.finditer(text):
            source, variables = m.group(1), json.loads(m.group(2))
            expected = m.group(4) if m.group(4) is not None else c_string(m.group(5))
            env = environment(1721952000)
            kwargs = dict(messages=[], tools=None, documents=None, add_generation_prompt=True,
                          bos_token="", eos_token="")
            kwargs.update(variables)
            try:
                got = env.from_string(source).render(**kwargs)
            except Exception as e:
                got = f"ERROR {type(e).__name__}: {e}"
            total += 1
            if got != expected:
                failures += 1
                print(f"{path}: {source!r}\n  jinja2:   {got!r}\n  expected: {expected!r}")
    print(f"{total - failures}/{total} cases agree with jinja2 {__import__('jinja2').__version__}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
