#!/usr/bin/env python3
"""Draws a window of a Chrome trace (quill-run --trace) as a timeline SVG.

For a machine without Perfetto or chrome://tracing at hand, and for the
README: one row per thread (named by its thread_name event), spans stacked
by nesting (a step, its kernel launches inside it, a launch's pieces on the
worker threads), coloured by category, instants (scheduler decisions) as
ticks. The window spans the steps asked for on the main thread.

  scripts/trace-timeline.py run.json -o run.svg --first-step 4 --steps 1

Prints one line: the window and how many spans of each category it drew.
"""
import argparse
import json
import os
import sys
from xml.sax.saxutils import escape

COLOURS = {"step": "#cbd5e0", "kernel": "#4299e1", "piece": "#48bb78",
           "sampling": "#ed8936", "scheduler": "#9f7aea"}
ROW_HEIGHT, LANE_HEIGHT, LEFT, WIDTH = 18, 16, 110, 1100


def fail(message):
    print("trace-timeline: " + message, file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except (OSError, ValueError) as error:
        fail(f"{path}: cannot read a trace: {error}")
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        fail(f"{path}: no traceEvents array")

    def number(value):
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def usable(e):
        # What this drawing reads of each phase; other events are left out.
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) \
                or not number(e.get("tid")):
            return False
        if e.get("ph") == "M":
            return e.get("name") != "thread_name" or isinstance(
                (e.get("args") or {}).get("name"), str)
        if e.get("ph") == "X":
            return number(e.get("ts")) and number(e.get("dur")) and e["dur"] >= 0
        return e.get("ph") == "i" and number(e.get("ts"))
    return [e for e in events if usable(e)]


def window(events, first, count):
    """The [start, end) of steps first..first+count-1 of the main thread."""
    steps = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "step"
                    and e.get("tid") == 1), key=lambda e: e["ts"])
    if first < 0 or first + count > len(steps) or count < 1:
        fail(f"the trace has {len(steps)} steps on its main thread: "
             f"steps {first} to {first + count - 1} are not all there")
    chosen = steps[first:first + count]
    return chosen[0]["ts"], chosen[-1]["ts"] + chosen[-1]["dur"]


def lanes(spans):
    """Each span's nesting depth on its thread (spans sorted by start)."""
    open_ends, depth = [], {}
    for span in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        while open_ends and open_ends[-1] <= span["ts"]:
            open_ends.pop()
        depth[id(span)] = len(open_ends)
        open_ends.append(span["ts"] + span["dur"])
    return depth


def draw(events, start, end, title):
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    inside = [e for e in events if e.get("ph") in ("X", "i")
              and e["ts"] >= start and e["ts"] + e.get("dur", 0) <= end]
    threads = sorted({e["tid"] for e in inside} | set(names))
    scale = WIDTH / max(end - start, 1e-9)
    body, counts, y = [], {}, 30
    for tid in threads:
        spans = [e for e in inside if e["tid"] == tid and e["ph"] == "X"]
        depth = lanes(spans)
        rows = max(depth.values(), default=0) + 1
        height = rows * LANE_HEIGHT + 4
        body.append(f'<text x="{LEFT - 6}" y="{y + 13}" text-anchor="end">'
                    f'{escape(names.get(tid, f"thread {tid}"))}</text>')
        body.append(f'<rect x="{LEFT}" y="{y}" width="{WIDTH}" height="{height}" '
                    f'fill="#f7fafc" stroke="#e2e8f0"/>')
        for span in spans:
            category = span.get("cat", "")
            counts[category] = counts.get(category, 0) + 1
            x = LEFT + (span["ts"] - start) * scale
            w = max(span["dur"] * scale, 0.5)
            top = y + 2 + depth[id(span)] * LANE_HEIGHT
            tip = f'{span["name"]} ({category}): {span["dur"]:.1f} us'
            body.append(f'<g class="{escape(category, {chr(34): "&quot;"})}">'
                        f'<title>{escape(tip)}</title>'
                        f'<rect x="{x:.2f}" y="{top}" width="{w:.2f}" height="{LANE_HEIGHT - 2}" '
                        f'fill="{COLOURS.get(category, "#a0aec0")}" stroke="#fff" stroke-width="0.5"/>')
            if w > 7 * len(span["name"]):
                body.append(f'<text x="{x + 3:.2f}" y="{top + 11}" font-size="10">'
                            f'{escape(span["name"])}</text>')
            body.append("</g>")
        for mark in (e for e in inside if e["tid"] == tid and e["ph"] == "i"):
            x = LEFT + (mark["ts"] - start) * scale
            counts["instant"] = counts.get("instant", 0) + 1
            body.append(f'<g class="instant"><title>{escape(mark["name"])}</title>'
                        f'<line x1="{x:.2f}" y1="{y}" x2="{x:.2f}" y2="{y + height}" '
                        f'stroke="#9f7aea" stroke-width="1.5"/></g>')
        y += height + 6
    # A time axis in microseconds.
    step = 10 ** max(0, len(str(int(end - start))) - 1)
    tick = 0
    while tick <= end - start:
        x = LEFT + tick * scale
        body.append(f'<line x1="{x:.2f}" y1="{y}" x2="{x:.2f}" y2="{y + 4}" stroke="#4a5568"/>'
                    f'<text x="{x:.2f}" y="{y + 16}" text-anchor="middle">{tick} us</text>')
        tick += step
    legend = " ".join(f'<tspan fill="{c}">\u25a0 {k}</tspan>' for k, c in COLOURS.items())
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" '
           f'height="{y + 30}" font-family="sans-serif" font-size="12">\n'
           f'<title>{escape(title)}</title>\n'
           f'<text x="{LEFT}" y="16">{escape(title)}  {legend}</text>\n'
           + "\n".join(body) + "\n</svg>\n")
    return svg, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--first-step", type=int, default=0,
                        help="the first step drawn, counted from 0 on the main thread")
    parser.add_argument("--steps", type=int, default=1, help="how many steps (default 1)")
    options = parser.parse_args()
    events = load(options.trace)
    start, end = window(events, options.first_step, options.steps)
    title = (f"{os.path.basename(options.trace)}: steps {options.first_step} to "
             f"{options.first_step + options.steps - 1}, {end - start:.0f} us")
    svg, counts = draw(events, start, end, title)
    try:
        with open(options.output, "w", encoding="utf-8") as f:
            f.write(svg)
    except OSError as error:
        fail(f"{options.output}: cannot write: {error}")
    drawn = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    print(f"trace-timeline: {start:.3f} to {end:.3f} us: {drawn}")


if __name__ == "__main__":
    main()
