"""The embedded default toolbox `demo` works on a fresh install, offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from workbench_magic import Workbench


@pytest.fixture
def demo(make_workbench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workbench:
    # no config anywhere: the embedded default applies
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return make_workbench()


def test_embedded_default_is_the_demo_toolbox(demo: Workbench) -> None:
    assert demo.config_source == "<embedded default>"
    assert [t.name for t in demo.toolboxes()] == ["demo"]
    box = demo.open("demo")
    assert box.failed == {}
    assert set(box.servers) == {"datasets", "notes"}


def test_datasets_server(demo: Workbench) -> None:
    demo.open("demo")
    listed = demo.call("demo/datasets/list_datasets").data["result"]
    names = {d["name"] for d in listed}
    assert {"penguins", "weather", "sales"} <= names
    rows = demo.call(
        "demo/datasets/query",
        {
            "dataset": "penguins",
            "columns": ["species", "body_mass_g"],
            "where": [{"column": "species", "op": "==", "value": "Gentoo"}],
            "order_by": "body_mass_g",
            "descending": True,
            "limit": 5,
        },
    )
    frame = rows.to_pandas()
    assert list(frame.columns) == ["species", "body_mass_g"]
    assert set(frame["species"]) == {"Gentoo"}
    assert list(frame["body_mass_g"]) == sorted(frame["body_mass_g"], reverse=True)
    agg = demo.call(
        "demo/datasets/aggregate", {"dataset": "sales", "group_by": ["region"], "metric": "revenue", "agg": "sum"}
    ).to_pandas()
    assert sorted(agg["region"]) == ["East", "North", "South", "West"]
    bad = demo.call("demo/datasets/query", {"dataset": "unicorns"})
    assert bad.is_error and "unicorns" in bad.text


def test_progress_and_image_tools(demo: Workbench) -> None:
    demo.open("demo")
    seen: list[float] = []
    profile = demo.call(
        "demo/datasets/profile", {"dataset": "weather", "delay": 0}, progress=lambda p, t, m: seen.append(p)
    )
    assert not profile.is_error
    assert len(seen) >= 4 and seen == sorted(seen)
    plot = demo.call("demo/datasets/plot", {"dataset": "penguins", "x": "bill_length_mm", "y": "body_mass_g"})
    png = plot.images[0]
    assert png.mime_type == "image/png" and png.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png.data) > 500


def test_notes_server_keeps_state(demo: Workbench) -> None:
    box = demo.open("demo")
    first = box.notes.add_note(title="one", body="alpha beta", tags=["x"]).data
    box.notes.add_note(title="two", body="gamma", tags=["y"])
    assert [n["title"] for n in box.notes.list_notes(tag="x").data["notes"]] == ["one"]
    assert box.notes.get_note(id=first["id"]).data["title"] == "one"
    box.notes.set_value(key="k", value={"a": [1, 2]})
    assert box.notes.get_value(key="k").data == {"key": "k", "value": {"a": [1, 2]}}
    assert box.notes.count_words(text="a b c\nd").data["words"] == 4
    assert box.notes.get_note(id=999).is_error


def test_demo_resources_and_prompts(demo: Workbench) -> None:
    demo.open("demo")
    uris = {r.uri for r in demo.resources("demo")}
    assert "dataset://index" in uris
    csv_text = demo.read_resource("demo/datasets", "dataset://penguins").text
    assert csv_text.splitlines()[0].startswith("species")
    assert {"analyze_dataset", "summarize_notes"} <= {p.name for p in demo.prompts("demo")}
    assert "penguins" in demo.get_prompt("demo/datasets/analyze_dataset", {"name": "penguins"}).text


def test_make_demo_smoke_run(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "workbench_magic", "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "0 failed" in out.stdout
    assert "Toolbox 'demo': 2/2 servers connected" in out.stdout


def test_import_does_not_load_the_sdk() -> None:
    code = "import sys, workbench_magic; print('mcp' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "False"]
