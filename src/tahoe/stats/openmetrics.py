"""The ``/statistics?t=openmetrics`` text.

Facts: ``reference/frontends.md`` §5 (OpenMetrics): counters first, as
``tahoe_counters_<name>``, then stats as ``tahoe_stats_<name>``, each group
sorted by key, one ``name value`` line each, then ``# EOF``. Dots become
underscores (hyphens stay), a trailing ``_NN_N_percentile`` becomes the label
``{quantile="0.NNN"}``, and a missing value (``None``) is written ``NaN``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

_PERCENTILE = re.compile(r"_(\d\d)_(\d)_percentile$")


def metric_name(prefix: str, key: str) -> str:
    """``prefix`` + the key with dots as underscores and a percentile as a label."""
    name = prefix + key.replace(".", "_")
    return _PERCENTILE.sub(lambda m: '{quantile="0.%s%s"}' % (m.group(1), m.group(2)), name)


def metric_value(value: object) -> str:
    """A number as Python writes it; ``None`` as ``NaN``; booleans as 1 or 0."""
    if value is None:
        return "NaN"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


def render_openmetrics(document: Mapping[str, Mapping[str, object]]) -> str:
    """The text for a ``{"counters": ..., "stats": ...}`` document, ending in ``# EOF\\n``."""
    lines = [f"{metric_name('tahoe_counters_', key)} {metric_value(value)}"
             for key, value in sorted(document.get("counters", {}).items())]
    lines += [f"{metric_name('tahoe_stats_', key)} {metric_value(value)}"
              for key, value in sorted(document.get("stats", {}).items())]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
