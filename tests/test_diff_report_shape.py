"""The diff report's text and JSON shape: a deep fork chain's role on one short line, the
warnings in the JSON as on stderr (tests/test_robust_thirtythird_extremes.py records the
programs behind both)."""

from baseline.run.report import DiffReport, _short_role


def test_a_run_of_equal_ancestors_is_shown_once_with_its_count():
    chain = "/".join(["sh"] + ["chain"] * 200) + "#0"
    assert _short_role(chain) == "sh/chain(x199)/chain#0"
    assert _short_role("sh/tar#0") == "sh/tar#0"
    assert _short_role("a/b/b#1") == "a/b/b#1"  # two equal: left as they are
    assert _short_role("a/b/b/b/c/c/c/c#0") == "a/b(x3)/c(x3)/c#0"


def test_warnings_are_in_the_json():
    report = DiffReport(anomalies=[], reorderings=[], anomaly_count=0, first_unexplained=None,
                        expected_ignored={"total": 0, "by_entry": {}}, good_traces=["g"], bad_trace="b",
                        events={"good": 1, "bad": 1}, settings={}, warnings=["some GOOD traces exited with status 1"])
    assert report.to_dict()["warnings"] == ["some GOOD traces exited with status 1"]
    assert DiffReport(**{**report.__dict__, "warnings": []}).to_dict()["warnings"] == []
