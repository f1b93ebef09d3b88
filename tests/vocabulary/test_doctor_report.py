"""The doctor's report: `.ok`, the text table and the HTML table."""

from __future__ import annotations

import dataclasses

import pytest

from workbench_magic.vocabulary.doctor import MARKS, DoctorReport, DoctorStep


def report() -> DoctorReport:
    return DoctorReport(
        "box/srv",
        (
            DoctorStep("config", "ok", "runs npx with 2 arguments over stdio"),
            DoctorStep("command", "warning", "npx is old", "upgrade it"),
            DoctorStep("process", "failed", 'exited at start with exit status 3; stderr: <boom> & "x"', "run it"),
            DoctorStep("protocol", "skipped", "not tried: the process step failed"),
        ),
    )


def test_ok_means_no_step_failed() -> None:
    assert not report().ok
    assert report().failed == report().steps[2]
    fine = DoctorReport("box/srv", (DoctorStep("config", "ok", "fine"), DoctorStep("tls", "skipped", "plain http")))
    assert fine.ok and fine.failed is None
    assert DoctorReport("box/srv", (DoctorStep("x", "warning", "hmm", "look"),)).ok
    assert fine.step("tls").finding == "plain http"
    with pytest.raises(KeyError):
        fine.step("nothing")


def test_steps_and_reports_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        report().steps[0].status = "failed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report().target = "other"  # type: ignore[misc]


def test_repr_is_one_line_per_step_with_a_mark_per_status() -> None:
    lines = repr(report()).splitlines()
    assert lines[0] == "Doctor box/srv: failed at process"
    assert len(lines) == 1 + len(report().steps)
    for line, step in zip(lines[1:], report().steps, strict=True):
        assert line.strip().startswith(f"{MARKS[step.status]} {step.name}")
        assert step.finding in line
    assert "→ upgrade it" in lines[2]
    assert len(set(MARKS.values())) == 4


def test_html_is_a_table_with_everything_escaped() -> None:
    shown = DoctorReport("<b>box</b>/srv", report().steps)._repr_html_()
    assert shown.startswith("<table") and shown.count("<tr") == 1 + len(report().steps)
    assert "&lt;boom&gt; &amp; &quot;x&quot;" in shown
    assert "<boom>" not in shown and "<b>box</b>" not in shown
    assert "&lt;b&gt;box&lt;/b&gt;/srv" in shown
