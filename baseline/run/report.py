"""The differ's answer: `DiffReport` (the bifurcation point, the regions ranked after it, what
was set aside as expected and why) and how it is shown -- text for a terminal, JSON for tools
(`write_report`). Built by baseline.run.diff.diff_traces; nothing here looks at traces."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from baseline.run.rules.base import OUTPUT_BYTES
from tracer.errors import printable

# How many of the other roles an anomaly was folded from are named (`repeated_in`).
REPEATED_IN_SHOWN = 10

JSON_VERSION = 1
TEXT_EXPECTED_SHOWN = 8


@dataclass
class DiffReport:
    """Result of `diff_traces`; `to_dict` gives the documented JSON object."""

    anomalies: list[dict[str, Any]]
    reorderings: list[dict[str, Any]]
    anomaly_count: int
    first_unexplained: int | None
    expected_ignored: dict[str, Any]
    good_traces: list[str]
    bad_trace: str
    events: dict[str, int]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def anomaly(self) -> bool:
        return self.anomaly_count > 0

    @property
    def bifurcation(self) -> dict[str, Any] | None:
        return self.anomalies[0] if self.anomalies else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": JSON_VERSION,
            "anomaly": self.anomaly,
            "bifurcation": self.bifurcation,
            "first_unexplained": self.first_unexplained,
            "anomalies": self.anomalies,
            "anomaly_count": self.anomaly_count,
            "reorderings": self.reorderings,
            "expected_ignored": self.expected_ignored,
            "good_traces": self.good_traces,
            "bad_trace": self.bad_trace,
            "events": self.events,
            "settings": self.settings,
            "warnings": self.warnings,
        }

    def render_text(self) -> str:
        lines: list[str] = []
        n_good = len(self.good_traces)
        if not self.anomaly:
            lines.append(
                f"no anomaly: {self.bad_trace} ({self.events['bad']} events) is explained by "
                f"{n_good} good trace(s)"
            )
        else:
            b = self.bifurcation
            assert b is not None
            lines.append(f"bifurcation: {_describe(b)}")
            lines.append(f"  {_where(b)}" + ("" if b["recovered"] else ", never re-joins good behaviour"))
            if b.get("repeats"):
                lines.append(f"  {_repeated(b)}")
            if b["last_common"]:
                lines.append("  last common events:")
                lines += [f"    {_event_line(e)}" for e in b["last_common"]]
            if b.get("next_event"):
                lines.append(f"  then: {_event_line(b['next_event'])}")
            if b.get("then_wrote"):
                cut = f" (its first {OUTPUT_BYTES} characters)" if len(b["then_wrote"]) >= OUTPUT_BYTES else ""
                lines.append(f"  the bad run then wrote{cut}: {_quoted(b['then_wrote'])}")
            if b["good_instead"]:
                lines.append("  good runs did instead:")
                lines += [f"    {_event_line(e)}" for e in b["good_instead"]]
            later = self.anomalies[1:]
            if later:
                lines.append(f"later anomalies (ranked, {self.anomaly_count - 1} in all):")
                for a in later:
                    lines.append(f"  {a['rank']}. [{a['score']:.1f}] {_describe(a)} "
                                 f"({_where(a)})" + (f"; {_repeated(a)}" if a.get("repeats") else ""))
        ign = self.expected_ignored
        if ign["total"]:
            lines.append(f"expected errors ignored: {ign['total']}")
            ranked = sorted(ign["by_entry"].items(), key=lambda kv: -kv[1]["count"])
            for eid, info in ranked[:TEXT_EXPECTED_SHOWN]:
                lines.append(f"  {info['count']:>6}  {eid}  ({info['probe']} {info['errno']}"
                             + (f" {info['path']}" if info["path"] else "")
                             + (f" in {info['context']}" if info.get("context") else "") + ")")
            if len(ranked) > TEXT_EXPECTED_SHOWN:
                rest = sum(info["count"] for _, info in ranked[TEXT_EXPECTED_SHOWN:])
                lines.append(f"  {rest:>6}  ... {len(ranked) - TEXT_EXPECTED_SHOWN} more entries (--json lists all)")
        else:
            lines.append("expected errors ignored: 0")
        # one line per line: a path or comm holding a newline or ESC is shown escaped
        return "\n".join(printable(line) for line in lines)


def _repeated(a: dict[str, Any]) -> str:
    """How often an anomaly was met again, folded into it: in sibling processes (a loop running
    the same command) or threads of its role, or again in its own thread (a pool thread's every
    task failing at one shared file)."""
    n, roles = a["repeats"], a["repeated_in"]
    more = " ..." if n > len(roles) else ""
    if roles and len(roles) == min(n, REPEATED_IN_SHOWN):  # each another process or thread, once
        return f"the same in {n} more sibling process{'es' if n > 1 else ''} ({', '.join(roles)}{more})"
    where = f"in this thread or in {', '.join(roles)}{more}" if roles else "in this thread"
    return f"the same {n} more time{'s' if n > 1 else ''}, {where}"


def _quoted(text: str) -> str:
    """Output bytes as one line: JSON string escapes (newlines, control characters)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _describe(a: dict[str, Any]) -> str:
    if a["kind"] == "missing_process":
        return f"process {a['process']['role']} of the good runs never started"
    out = a["probe"]
    if a["path"]:
        out += f" {a['path']}"
    if a.get("path2"):
        out += f" (other path: {a['path2']})"
    if a.get("timed_out_ms") is not None:
        out += f" (timed out: nothing ready after {a['timed_out_ms']:g} ms, where the good runs' waits were answered)"
    elif a.get("empty_answer"):
        out += " (came back empty: nothing to read, where the good runs' first call there had content)"
    else:
        out += f" -> {a['errno']}" if a["errno"] else " (no error: a path good runs never took)"
    return out


def _where(a: dict[str, Any]) -> str:
    """"process COMM pid P tid T role R, seq S" of an anomaly; a process of the good runs the
    bad run never started has no pid, tid or seq of its own (they read "None" and "-1")."""
    p = a["process"]
    words = [f"process {p['comm']}"] + [f"{k} {_short_role(p[k]) if k == 'role' else p[k]}"
                                        for k in ("pid", "tid", "role") if p.get(k) is not None]
    return " ".join(words) + (f", seq {a['position']}" if a["position"] is not None and a["position"] >= 0 else "")


def _short_role(role: str) -> str:
    """A role as the text report shows it: a run of 3+ equal ancestors as one, with its count
    (a fork chain 200 deep is `chain/chain/.../chain#0`, a line of 2,000 characters; the JSON
    keeps the role whole)."""
    parts = role.split("/")
    out: list[str] = []
    i = 0
    while i < len(parts):
        j = i
        while j + 1 < len(parts) and parts[j + 1] == parts[i]:
            j += 1
        out.append(f"{parts[i]}(x{j - i + 1})" if j - i >= 2 else "/".join(parts[i:j + 1]))
        i = j + 1
    return "/".join(out)


def _event_line(e: dict[str, Any]) -> str:
    s = f"seq {e['seq']}: {e['probe']}" if e["seq"] is not None else e["probe"]
    if e["path"]:
        s += f" {e['path']}"
    if e.get("path2"):
        s += f" {e['path2']}"
    if e["errno"]:
        s += f" -> {e['errno']}"
    if e.get("output"):
        s += f" wrote {_quoted(e['output'][:80])}"
    return s


def write_report(report: DiffReport, as_json: bool, out: Any = None) -> None:
    from tracer.schema import dumps_json

    out = out or sys.stdout
    if as_json:
        out.write(dumps_json(report.to_dict()) + "\n")
    else:
        out.write(report.render_text() + "\n")
