"""Small charts drawn on the server as inline SVG (pure; no chart library in the browser).

Two shapes are enough for the gateway's pages: a bar chart of groups of
bars (rates of recent operations, latency percentiles per operation) and a
meter (a stacked horizontal bar, for disk space). Colours come from the
stylesheet through class names (``bar-<series>``, ``seg-<kind>``), so the
markup carries no inline style and a strict Content-Security-Policy holds.
Every bar and segment has a ``<title>``: its exact value on hover.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from attrs import frozen

__all__ = ["Bar", "BarGroup", "Segment", "bar_chart", "legend", "meter"]

#: Width and height of the drawing (the stylesheet scales it to the page).
WIDTH = 640
HEIGHT = 180
_LEFT = 72  # room for the value axis labels
_BOTTOM = 22  # room for the group labels
_TOP = 8
#: The widest a group of bars gets (a few bars stay bars, not walls).
MAX_SLOT = 90


@frozen
class Bar:
    """One bar: its value, the series it belongs to (a CSS class suffix) and its tooltip."""

    value: float
    series: str
    tooltip: str


@frozen
class BarGroup:
    """Bars drawn side by side above one label on the horizontal axis."""

    label: str
    bars: tuple[Bar, ...]


@frozen
class Segment:
    """One part of a meter: a size, a kind (CSS class suffix) and its tooltip."""

    value: float
    kind: str
    tooltip: str


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _ticks(top: float, integer: bool) -> list[float]:
    """The values the axis labels: zero, the middle and the top (whole numbers for counts)."""
    if not integer:
        return [0.0, top / 2, top]
    return [0.0, float(top)] if top < 2 else [0.0, float(int(top) // 2), float(top)]


def bar_chart(groups: Sequence[BarGroup], *, title: str,
              value_format: Callable[[float], str], empty: str = "No data yet.",
              integer: bool = False) -> str:
    """An SVG bar chart; zero at the bottom, the largest value at the top.

    :param title: what the chart shows (its accessible name).
    :param value_format: how the axis labels show a value (e.g. a rate).
    :param empty: the text drawn when there is no bar at all.
    :param integer: the values are counts (the axis shows whole numbers only).
    """
    head = (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>')
    bars = [bar for group in groups for bar in group.bars]
    if not bars:
        return (head + f'<text class="chart-empty" x="{WIDTH // 2}" y="{HEIGHT // 2}" '
                f'text-anchor="middle">{escape(empty)}</text></svg>')
    top = max(bar.value for bar in bars) or 1.0
    if integer:
        top = float(max(1, math.ceil(top)))
    plot_width = WIDTH - _LEFT - 4
    plot_height = HEIGHT - _TOP - _BOTTOM
    parts = [head]
    for tick in _ticks(top, integer):
        y = _TOP + plot_height * (1 - tick / top)
        parts.append(f'<line class="grid" x1="{_LEFT}" x2="{WIDTH - 4}" y1="{_number(y)}" '
                     f'y2="{_number(y)}"/><text class="axis" x="{_LEFT - 6}" '
                     f'y="{_number(y + 4)}" text-anchor="end">'
                     f"{escape(value_format(tick))}</text>")
    slot = min(plot_width / len(groups), MAX_SLOT)
    label_every = max(1, int(len(groups) * 40 / plot_width) + 1)  # labels at least 40 px apart
    for index, group in enumerate(groups):
        x0 = _LEFT + index * slot
        width = slot * 0.8 / max(1, len(group.bars))
        for position, bar in enumerate(group.bars):
            height = plot_height * max(0.0, bar.value) / top
            x = x0 + slot * 0.1 + position * width
            parts.append(f'<rect class="bar bar-{escape(bar.series, quote=True)}" '
                         f'x="{_number(x)}" y="{_number(_TOP + plot_height - height)}" '
                         f'width="{_number(max(width - 1, 1))}" height="{_number(height)}">'
                         f"<title>{escape(bar.tooltip)}</title></rect>")
        if group.label and index % label_every == 0:
            parts.append(f'<text class="axis" x="{_number(x0 + slot / 2)}" y="{HEIGHT - 6}" '
                         f'text-anchor="middle">{escape(group.label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def meter(segments: Sequence[Segment], *, title: str) -> str:
    """A stacked horizontal bar of ``segments`` (their sum fills the width).

    Negative values count as zero; an all-zero meter is drawn empty.
    """
    total = sum(max(0.0, s.value) for s in segments)
    parts = [f'<svg class="meter" viewBox="0 0 {WIDTH} 24" preserveAspectRatio="none" '
             f'role="img" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
             f'<rect class="meter-back" x="0" y="0" width="{WIDTH}" height="24" rx="4"/>']
    x = 0.0
    for segment in segments:
        if total <= 0 or segment.value <= 0:
            continue
        width = WIDTH * segment.value / total
        parts.append(f'<rect class="seg seg-{escape(segment.kind, quote=True)}" '
                     f'x="{_number(x)}" y="0" width="{_number(width)}" height="24">'
                     f"<title>{escape(segment.tooltip)}</title></rect>")
        x += width
    parts.append("</svg>")
    return "".join(parts)


def legend(items: Sequence[tuple[str, str]], *, prefix: str = "bar") -> str:
    """An HTML legend: a coloured swatch (class ``<prefix>-<kind>``) and a label per item."""
    entries = "".join(
        f'<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">'
        f'<rect class="{prefix} {prefix}-{escape(kind, quote=True)}" width="10" height="10"/>'
        f"</svg>{escape(label)}</li>" for kind, label in items)
    return f'<ul class="legend">{entries}</ul>'
