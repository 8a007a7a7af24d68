"""Inline SVG charts: no JavaScript, no CDN, readable offline and at phone width.

The SVG scales with its container (viewBox, width 100%), and sits in a raw `<div>` block so
Markdown leaves it alone (no blank lines inside). Topology diagrams are never drawn wider than
their viewBox in CSS pixels: a one-GPU box stays small next to an eight-GPU one instead of
being stretched to the column, so diagrams side by side share one scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

ROW_H = 22
GROUP_H = 24
LABEL_W = 300
BAR_W = 360
VALUE_W = 110


@dataclass(frozen=True)
class Bar:
    """One figure: its label, value, and css kind (current, past, drift, ...)."""

    label: str
    value: float
    kind: str = "current"
    href: str = ""


def bar_chart(title: str, unit: str, groups: list[tuple[str, list[Bar]]]) -> str:
    """Horizontal bars grouped under headings (one group per milestone)."""
    bars = [b for _, group in groups for b in group]
    if not bars:
        return ""
    top = max(max(b.value for b in bars), 0.0) or 1.0
    width = LABEL_W + BAR_W + VALUE_W
    height = 28 + sum(GROUP_H + ROW_H * len(g) for _, g in groups if g)
    out = [
        f'<div class="fb-chart"><svg viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="fb-chart-title" x="0" y="16">{escape(title)}'
        f"{escape(f' ({unit})') if unit else ''}</text>",
    ]
    y = 28
    for heading, group in groups:
        if not group:
            continue
        out.append(f'<text class="fb-chart-group" x="0" y="{y + 16}">{escape(heading)}</text>')
        y += GROUP_H
        for bar in group:
            length = max(BAR_W * max(bar.value, 0.0) / top, 1.0)
            label = bar.label if len(bar.label) <= 42 else bar.label[:41] + "…"
            text = f'<text x="{LABEL_W - 6}" y="{y + 15}" text-anchor="end">{escape(label)}</text>'
            if bar.href:
                text = f'<a href="{escape(bar.href)}">{text}</a>'
            out.append(
                f'{text}<rect class="fb-bar fb-bar-{escape(bar.kind)}" x="{LABEL_W}" '
                f'y="{y + 4}" width="{length:.1f}" height="{ROW_H - 7}">'
                f"<title>{escape(bar.label)}: {bar.value:g} {escape(unit)}</title></rect>"
                f'<text x="{LABEL_W + length + 4:.1f}" y="{y + 15}">{bar.value:g}</text>'
            )
            y += ROW_H
    out.append("</svg></div>")
    return "".join(out)


def numa_diagram(layout: list[int], link_label: str) -> str:
    """GPUs drawn inside their NUMA node, with the interconnect named between the nodes."""
    nodes: dict[int, list[int]] = {}
    for gpu, node in enumerate(layout):
        nodes.setdefault(int(node), []).append(gpu)
    if not nodes:
        return ""
    box_w, gpu_w, gap = 330, 70, 40
    per_row = 4
    rows = max((len(g) + per_row - 1) // per_row for g in nodes.values())
    box_h = 40 + rows * 50
    width = len(nodes) * box_w + (len(nodes) - 1) * gap
    height = box_h + 36
    # one viewBox unit = one CSS pixel while the column is wide enough (max-width); below
    # min-width the box scrolls sideways, like the bar charts, instead of shrinking the text
    style = f"max-width:{width}px;min-width:min(22rem,{width}px)"
    out = [
        f'<div class="fb-chart"><svg class="fb-topology" style="{style}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="GPU to NUMA node layout" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, (node, gpus) in enumerate(sorted(nodes.items())):
        x0 = i * (box_w + gap)
        out.append(
            f'<rect class="fb-numa" x="{x0}" y="0" width="{box_w}" height="{box_h}" '
            f'rx="8"/><text x="{x0 + 10}" y="20">NUMA node {node}</text>'
        )
        for j, gpu in enumerate(gpus):
            gx = x0 + 10 + (j % per_row) * (gpu_w + 10)
            gy = 32 + (j // per_row) * 50
            out.append(
                f'<rect class="fb-gpu" x="{gx}" y="{gy}" width="{gpu_w}" height="38" '
                f'rx="4"/><text x="{gx + gpu_w / 2}" y="{gy + 24}" '
                f'text-anchor="middle">GPU {gpu}</text>'
            )
    out.append(
        f'<text x="{width / 2}" y="{box_h + 24}" text-anchor="middle">'
        f"{escape(link_label)}</text></svg></div>"
    )
    return "".join(out)
