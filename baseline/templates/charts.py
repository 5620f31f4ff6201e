"""Charts for the HTML reports, in one style (matplotlib, Agg backend, PNG embedded as base64).

Rules every chart follows, because the reports are read by people deciding what to fix:
* counts get integer ticks with thousands separators; shares get percent ticks;
* a time series is drawn only where there is data: an interval without data is a gap in the
  line (NaN), never a line drawn across it and never a made-up zero; nothing after `now`;
* when one bar is more than RATIO_FOR_LOG times the smallest non-zero one, the value axis is
  logarithmic (and says so) and every bar carries its value, so a routine error with millions of
  occurrences does not flatten the rest;
* series are named by what they are (a cluster's signature), not by bare ids.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import logging
import math
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from baseline.templates import pct
from tracer.errors import printable

# matplotlib warns on stderr where its config directory is not writable (HOME read-only, a
# service user: "created a temporary cache directory ... it is highly recommended to set the
# MPLCONFIGDIR") and while a fresh machine builds its font cache: lines of another library's
# advice around a command's own; the charts are the same either way. (Set before any chart
# function imports a matplotlib module.)
logging.getLogger("matplotlib").setLevel(logging.ERROR)

RATIO_FOR_LOG = 50
WIDTH = 10.6  # inches: the page's content width (1,056 CSS px at 96 dpi, less the figure padding)
PALETTE = ["#3b6ea8", "#d9822b", "#3f9b5c", "#c23b3b", "#7e5aa6", "#8c6d4f", "#d16aa5", "#6f7780", "#a6a23a", "#2fa3b5"]
MUTED = "#9aa3ad"
INK = "#24292f"
SUBTLE = "#57606a"
GRID = "#e6e9ed"
DPI = 144  # 1.5x CSS pixels: crisp on high-density screens, still small files


@dataclass(frozen=True)
class Chart:
    """A rendered chart: PNG bytes and the size to show it at (CSS pixels)."""

    name: str
    title: str
    png: bytes
    width: int
    height: int
    note: str = ""
    alt: str = ""  # what the chart shows, in words: the img alt text (and what tests read)

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode()


def _config_dir_without_home() -> None:
    """A HOME (or XDG_CONFIG_HOME/XDG_CACHE_HOME) that does not exist is not created for
    matplotlib's cache: it gets a directory of this process's own, removed at exit (a service
    user's HOME=/nonexistent appeared after a coverage report). MPLCONFIGDIR, when set, wins."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    home = os.path.expanduser("~")
    bases = [os.environ.get(v) or os.path.join(home, d) for v, d in (("XDG_CONFIG_HOME", ".config"),
                                                                      ("XDG_CACHE_HOME", ".cache"))]
    if all(os.path.isdir(os.path.dirname(b.rstrip(os.sep)) or os.sep) for b in bases):
        return
    import atexit
    import shutil
    import tempfile

    own = tempfile.mkdtemp(prefix="tracebase-matplotlib-")
    atexit.register(shutil.rmtree, own, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = own


def _pyplot():
    import warnings

    _config_dir_without_home()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a character of the data the font lacks is drawn as a box; matplotlib's warning about it
    # printed the character (and a source line) on the command's stderr
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)

    plt.rcParams.update({
        "font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10, "axes.titleweight": "bold",
        "axes.edgecolor": "#c9d1d9", "axes.labelcolor": SUBTLE, "axes.titlecolor": INK, "xtick.color": SUBTLE,
        "ytick.color": SUBTLE, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
        "grid.color": GRID, "grid.linewidth": 0.8, "axes.axisbelow": True, "legend.frameon": False,
        "svg.fonttype": "none",
    })
    return plt


def _finish(name: str, title: str, fig, note: str = "", alt: str = "") -> Chart:
    buf = io.BytesIO()
    # No "Software" text chunk: it names the matplotlib version, so an upgrade alone would change
    # the bytes of reports that are otherwise a function of their input.
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", facecolor="white", metadata={"Software": None})
    _pyplot().close(fig)
    png = buf.getvalue()
    w, h = struct.unpack(">II", png[16:24])  # IHDR
    return Chart(name, title, png, w * 96 // DPI, h * 96 // DPI, note, alt or title)  # CSS px are 1/96 in


def count_formatter():
    import matplotlib.ticker as mt

    return mt.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 or v == 0 else "")


def _value_axis(axis, values: Sequence[float]) -> bool:
    """Integer count ticks; log scale when the values span more than RATIO_FOR_LOG. Returns log?"""
    import matplotlib.ticker as mt

    positive = [v for v in values if v and v > 0]
    log = bool(positive) and max(positive) / min(positive) > RATIO_FOR_LOG
    if log:
        axis.axes.set_xscale("log") if axis is axis.axes.xaxis else axis.axes.set_yscale("log")
        axis.set_major_locator(mt.LogLocator(base=10))
        axis.set_minor_locator(mt.NullLocator())
    else:
        axis.set_major_locator(mt.MaxNLocator(integer=True, nbins=6, min_n_ticks=2))
    axis.set_major_formatter(count_formatter())
    return log


def short(text: str, width: int = 64) -> str:
    """A label as drawn: control characters from the data (a probe name with a newline or an
    escape) as Python escapes, cut to `width`."""
    text = printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def hbar(name: str, title: str, labels: Sequence[str], values: Sequence[int], *, xlabel: str,
         color: str = PALETTE[0]) -> Chart:
    """One horizontal bar per label (first label on top), value printed at each bar."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 0.34 * len(labels) + 0.9))
    y = list(range(len(labels)))[::-1]
    log = _value_axis(ax.xaxis, values)
    shown = [v if v > 0 or not log else math.nan for v in values]
    ax.barh(y, shown, color=color, height=0.62)
    ax.set_yticks(y, [short(lbl) for lbl in labels])
    ax.grid(axis="y", visible=False)
    _limits(ax, values, log)
    _annotate(ax, y, values, log)
    ax.set_xlabel(xlabel + (" (log scale)" if log else ""))
    ax.set_title(title, loc="left")
    alt = f"{title}{' (log scale)' if log else ''}: " + "; ".join(f"{lbl} {v:,}" for lbl, v in zip(labels, values, strict=True))
    return _finish(name, title, fig, alt=alt)


def grouped_hbar(name: str, title: str, labels: Sequence[str], groups: Sequence[tuple[str, Sequence[int], str]],
                 *, xlabel: str) -> Chart:
    """Bars of several series per label (e.g. this week and the previous one)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 0.46 * len(labels) + 1.1))
    n = len(groups)
    height = 0.8 / n
    all_values = [v for _, vals, _ in groups for v in vals]
    log = _value_axis(ax.xaxis, all_values)
    base = list(range(len(labels)))[::-1]
    _limits(ax, all_values, log)
    for k, (label, vals, color) in enumerate(groups):
        y = [b + (n - 1) / 2 * height - k * height for b in base]
        ax.barh(y, [v if v > 0 or not log else math.nan for v in vals], height=height * 0.92, color=color, label=printable(label))
        _annotate(ax, y, vals, log, size=7)
    ax.set_yticks(base, [short(lbl, 48) for lbl in labels])
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(xlabel + (" (log scale)" if log else ""))
    _legend_on_top(ax, title, n)
    alt = f"{title}{' (log scale)' if log else ''}: " + "; ".join(
        f"{lbl} " + ", ".join(f"{g} {vals[i]:,}" for g, vals, _ in groups) for i, lbl in enumerate(labels))
    return _finish(name, title, fig, alt=alt)


def _limits(ax, values: Sequence[int], log: bool) -> None:
    """Value-axis limits for all the bars at once, with room for the value labels."""
    top = max([v for v in values if v] or [1])
    if log:
        ax.set_xlim(1, top * 4)  # bars start at 1
    else:
        ax.set_xlim(0, top * 1.15)


def _annotate(ax, y: Sequence[float], values: Sequence[int], log: bool, size: int = 8) -> None:
    for yy, v in zip(y, values, strict=True):
        x = v if v > 0 else (1 if log else 0)
        ax.text(x, yy, f" {v:,}", va="center", ha="left", fontsize=size, color=SUBTLE)


def _legend_on_top(ax, title: str, entries: int, per_row: int = 8) -> None:
    """Legend in a row between the title and the plot: it never drifts away from a tall chart."""
    rows = math.ceil(entries / per_row)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=min(entries, per_row), fontsize=8,
              borderaxespad=0.3, handlelength=1.4, columnspacing=1.4)
    ax.set_title(title, loc="left", pad=8 + 15 * rows)


def stacked_shares(name: str, title: str, labels: Sequence[str], parts: Sequence[tuple[str, Sequence[float], str]],
                   *, xlabel: str) -> Chart:
    """100 % stacked bars (shares 0..1 per label), legend under the chart."""
    import matplotlib.ticker as mt

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 0.36 * len(labels) + (1.0 if len(labels) > 1 else 0.75)))
    y = list(range(len(labels)))[::-1]
    ax.set_ylim(-0.6, len(labels) - 0.4)
    left = [0.0] * len(labels)
    for part, shares, color in parts:
        ax.barh(y, shares, left=left, color=color, label=printable(part), height=0.62)
        for yy, lft, w in zip(y, left, shares, strict=True):
            if w >= 0.08:
                ax.text(lft + w / 2, yy, pct(w).replace(" ", ""), ha="center", va="center", fontsize=7, color="white")
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(mt.PercentFormatter(1.0, decimals=0))
    ax.set_yticks(y, [short(lbl, 48) for lbl in labels])
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(xlabel)
    _legend_on_top(ax, title, len(parts))
    alt = f"{title}: " + "; ".join(
        f"{lbl} " + ", ".join(f"{p} {vals[i]:.0%}" for p, vals, _ in parts if vals[i]) for i, lbl in enumerate(labels))
    return _finish(name, title, fig, alt=alt)


def small_multiples(name: str, title: str, panels: Sequence[tuple[str, Sequence[dt.datetime], Sequence[float]]],
                    *, ylabel: str, start: dt.datetime, end: dt.datetime, columns: int = 2) -> Chart:
    """One small time-series panel per series (own integer y scale, shared time axis), so a big
    series does not flatten the small ones. NaN values are gaps (no data), not zeros."""
    import matplotlib.dates as md

    plt = _pyplot()
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(WIDTH, 1.75 * rows + 0.3), sharex=True, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(panels):
            ax.set_visible(False)
            continue
        label, times, values = panels[k]
        color = PALETTE[k % len(PALETTE)]
        ax.plot(times, values, color=color, linewidth=1.4, marker="o", markersize=2.2)
        ax.fill_between(times, values, color=color, alpha=0.12, linewidth=0)
        ax.set_ylim(bottom=0, top=max([v for v in values if not math.isnan(v)] or [1]) * 1.2 or 1)
        _value_axis(ax.yaxis, [1, 2])  # integer ticks, linear
        ax.set_title(short(label, 60 if columns == 2 else 130), loc="left", fontsize=8.5)
        ax.set_xlim(start, end)
        if k % columns == 0:
            ax.set_ylabel(ylabel, fontsize=8)
    locator = md.AutoDateLocator(minticks=3, maxticks=7)
    for ax in axes[-1]:
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(md.ConciseDateFormatter(locator))
    fig.suptitle(title, x=0.01, ha="left", fontsize=10, fontweight="bold", color=INK)
    fig.tight_layout()
    return _finish(name, title, fig, alt=f"{title}, one panel per series: " + "; ".join(p[0] for p in panels))


def week_lines(name: str, title: str, series: Sequence[tuple[str, Sequence[float], str, str]], *, ylabel: str) -> Chart:
    """Values per weekday (Mon..Sun) for a few weeks; NaN = no data (a gap), days after today absent."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 2.8))
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    values = []
    for label, vals, color, style in series:
        ax.plot(range(7), vals, style, color=color, label=printable(label), linewidth=1.6, markersize=4)
        values += [v for v in vals if not math.isnan(v)]
    ax.set_xticks(range(7), days)
    ax.set_xlim(-0.3, 6.3)
    ax.set_ylim(bottom=0, top=max(values or [1]) * 1.15 or 1)
    _value_axis(ax.yaxis, [1, 2])
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    ax.legend(fontsize=8, loc="upper right")
    alt = f"{title}: " + "; ".join(
        f"{label} " + ", ".join(f"{d} {v:,.0f}" for d, v in zip(days, vals, strict=True) if not math.isnan(v))
        for label, vals, _, _ in series)
    return _finish(name, title, fig, alt=alt)
