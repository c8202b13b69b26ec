"""A self-contained flame graph (SVG) from folded stacks: no network, no external script.

    write_flamegraph({"main;serve;burn_cpu": 90, "main;serve;write": 10}, "flamegraph.svg")

The layout is Brendan Gregg's: one box per frame, its width the share of samples whose stack
passes through it, callers below callees ("all" at the bottom), siblings in name order (a flame
graph's x axis is not time). Each box carries a <title> (the function, its samples and share):
the tooltip a browser shows. A little inline script zooms into a clicked box (its callees fill
the width, its callers stay below); a click on "all" resets; embedded in a page (report.html's
<object>) it posts the page its frame count and size once drawn. Colours are a warm hue per name,
so a function keeps its colour across cells. It lives in core, beside the profile it draws,
because the run and the sweep that write a cell's files sit below the report layer.
"""

from __future__ import annotations

import hashlib
import os
from html import escape
from typing import Optional

WIDTH = 1200
PAD = 10
FRAME_H = 16
TOP_MARGIN = 34  # the title
BOTTOM_MARGIN = 20  # the hint line
FONT_PX = 12
CHAR_PX = 0.59 * FONT_PX  # a monospace-ish average glyph width, to fit labels in their box
MIN_WIDTH_PX = 0.1  # narrower boxes are not drawn (their samples still count in their callers)

_SCRIPT = """
<script type="text/ecmascript"><![CDATA[
(function () {
  var frames = document.querySelectorAll('g.f');
  var plot = %(plot)s, pad = %(pad)s, charPx = %(char)s;
  function label(g, w) {
    var t = g.querySelector('text'), name = g.getAttribute('data-name');
    var fit = Math.floor((w - 6) / charPx);
    t.textContent = fit < 3 ? '' : (name.length <= fit ? name : name.slice(0, fit - 2) + '..');
  }
  function zoom(target) {
    var x0 = +target.getAttribute('data-x'), w0 = +target.getAttribute('data-w');
    var d0 = +target.getAttribute('data-d');
    frames.forEach(function (g) {
      var x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w');
      var d = +g.getAttribute('data-d'), r = g.querySelector('rect');
      var inside = x >= x0 - 1e-9 && x + w <= x0 + w0 + 1e-9;
      var below = d < d0 && x <= x0 + 1e-9 && x + w >= x0 + w0 - 1e-9;
      if (!(inside || below)) { g.style.display = 'none'; return; }
      g.style.display = '';
      var nx = below ? 0 : (x - x0) / w0, nw = below ? 1 : w / w0;
      r.setAttribute('x', pad + nx * plot); r.setAttribute('width', nw * plot);
      g.querySelector('text').setAttribute('x', pad + nx * plot + 3);
      label(g, nw * plot);
    });
  }
  frames.forEach(function (g) {
    g.addEventListener('click', function () { zoom(g); });
  });
  // embedded (report.html's <object>, another file: origin): tell the page it is drawn and its size
  if (window.parent && window.parent !== window) {
    var root = document.documentElement;
    window.parent.postMessage({loadbenchFlamegraph: {frames: frames.length,
      width: +root.getAttribute('width'), height: +root.getAttribute('height')}}, '*');
  }
})();
]]></script>
"""


def _colour(name: str) -> str:
    """A warm colour from the name's hash: the same function, the same colour everywhere."""
    digest = hashlib.md5(name.encode("utf-8", "replace")).digest()
    red = 205 + digest[0] % 50
    green = digest[1] % 230
    blue = digest[2] % 55
    return f"rgb({red},{green},{blue})"


class _Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.children: dict[str, _Node] = {}


def _tree(folded: dict[str, int]) -> _Node:
    root = _Node("all")
    for stack, count in folded.items():
        if count <= 0:
            continue
        root.count += count
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node(frame))
            node.count += count
    return root


def _depth(node: _Node) -> int:
    return 1 + max((_depth(c) for c in node.children.values()), default=0)


def layout(folded: dict[str, int], width: int = WIDTH) -> list[dict]:
    """Every box to draw: {name, depth, x, w, samples} with x and w in pixels (2 decimals),
    depth 0 for "all"; children in name order from their parent's left edge."""
    root = _tree(folded)
    if root.count == 0:
        return []
    plot = width - 2 * PAD
    boxes: list[dict] = []

    def place(node: _Node, depth: int, x: float) -> None:
        w = plot * node.count / root.count
        if w < MIN_WIDTH_PX:
            return
        boxes.append(
            {"name": node.name, "depth": depth, "x": round(PAD + x, 2), "w": round(w, 2),
             "samples": node.count}
        )  # fmt: skip
        left = x
        for name in sorted(node.children):
            child = node.children[name]
            place(child, depth + 1, left)
            left += plot * child.count / root.count

    place(root, 0, 0.0)
    return boxes


def render(folded: dict[str, int], title: str = "CPU flame graph", width: int = WIDTH) -> str:
    """The SVG text of ``folded``'s flame graph."""
    root = _tree(folded)
    total = root.count
    depth = _depth(root) if total else 1
    height = TOP_MARGIN + depth * FRAME_H + BOTTOM_MARGIN
    base = TOP_MARGIN + (depth - 1) * FRAME_H  # the y of "all"
    plot = width - 2 * PAD
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="Verdana, sans-serif" font-size="{FONT_PX}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fdfdf5"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]
    if not total:
        out.append(f'<text x="{PAD}" y="{base}">no samples</text>')
    for box in layout(folded, width):
        name, samples = box["name"], box["samples"]
        y = base - box["depth"] * FRAME_H
        fit = int((box["w"] - 6) // CHAR_PX)
        text = name if len(name) <= fit else (name[: fit - 2] + ".." if fit >= 3 else "")
        share = 100.0 * samples / total
        out.append(
            f'<g class="f" data-name="{escape(name)}" data-x="{(box["x"] - PAD) / plot:.6f}" '
            f'data-w="{box["w"] / plot:.6f}" data-d="{box["depth"]}" style="cursor:pointer">'
            f"<title>{escape(name)} ({samples:,} samples, {share:.2f} %)</title>"
            f'<rect x="{box["x"]}" y="{y}" width="{box["w"]}" height="{FRAME_H - 1}" '
            f'fill="{"rgb(240,240,220)" if box["depth"] == 0 else _colour(name)}" rx="2"/>'
            f'<text x="{round(box["x"] + 3, 2)}" y="{y + FRAME_H - 4}">{escape(text)}</text></g>'
        )
    out.append(
        f'<text x="{PAD}" y="{height - 5}" font-size="11" fill="#555">width = share of samples; '
        "callers below callees; click a box to zoom, click &#8220;all&#8221; to reset</text>"
    )
    out.append(_SCRIPT % {"plot": plot, "pad": PAD, "char": CHAR_PX})
    out.append("</svg>\n")
    return "\n".join(out)


def write_flamegraph(
    folded: dict[str, int],
    path: "str | os.PathLike",
    title: str = "CPU flame graph",
    width: Optional[int] = None,
) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(folded, title, width or WIDTH))
