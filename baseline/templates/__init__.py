"""One template set and one style for every HTML report tracebase writes.

The audit report (baseline.fleet.report) and the weekly coverage report
(baseline.pipeline.coverage) render through `render(template, **context)`: jinja2 templates
(`*.html.j2`, package data beside this file) extending `base.html.j2`, one stylesheet
(`style.css`, inlined), charts from `baseline.templates.charts` embedded as base64 PNG. Pages are
self-contained: no scripts, no network.

Filters for numbers people read: `num` (thousands separators, 3 significant digits for
fractions), `pct` (a share as a percentage), `change` (signed percentage), `when` (UTC to the
minute: no microseconds).

May import only libraries and `tracer` (the lowest layer of baseline, beside `run`).
"""

from __future__ import annotations

import datetime as dt
import math
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def num(value: Any, digits: int = 3) -> str:
    """1234567 -> '1,234,567'; 0.012345 -> '0.0123'; 12.345 -> '12.3'; None/NaN -> '–'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 10 ** (digits - 1):
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def pct(value: Any, decimals: int = 0) -> str:
    """A share 0..1 as a percentage; tiny non-zero shares show as '<1 %' rather than '0 %'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    v = float(value) * 100
    if 0 < v < 10 ** -decimals:
        return f"<{10 ** -decimals:g} %"
    # 99.6 % must not read as 100 % (nor 0.4 % as 0 %): one more decimal at the ends
    while decimals < 2 and (f"{v:.{decimals}f}" in ("100", "100.0") and v < 100):
        decimals += 1
    return f"{v:.{decimals}f} %"


def change(value: Any) -> str:
    """A change in percent, signed: +200 %, −12 %."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:+,.0f} %".replace("-", "−")


def when(value: Any) -> str:
    """A UTC time to the minute (a date stays a date)."""
    if value is None:
        return "–"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracebase")
    except PackageNotFoundError:  # running from a checkout without an install
        return "dev"


@cache
def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,  # a missing value is a bug, not an empty cell
    )
    env.filters.update(num=num, pct=pct, change=change, when=when)
    return env


def render(template: str, **context: Any) -> str:
    """Render one of the report templates with the shared base and style."""
    context.setdefault("generated", dt.datetime.now(dt.UTC))
    context.setdefault("version", _version())
    return environment().get_template(template).render(**context)
