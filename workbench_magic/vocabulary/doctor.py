"""What a connection doctor found: `DoctorStep` (one check) and `DoctorReport` (all of them).

Plain dataclasses (no SDK, no pydantic): `workbench_magic.engine.doctor.diagnose` makes them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal

__all__ = ["MARKS", "RUNNERS", "DoctorReport", "DoctorStep", "StepStatus"]

StepStatus = Literal["ok", "failed", "skipped", "warning"]

#: The mark a text report shows for each status.
MARKS: dict[str, str] = {"ok": "✓", "failed": "✗", "skipped": "-", "warning": "!"}

#: Package runners a stdio command may name: what each is, and how to get it (one line).
RUNNERS: dict[str, tuple[str, str]] = {
    "npx": ("Node.js's package runner", "install Node.js, which brings npx: https://nodejs.org (or apt install npm)"),
    "node": ("Node.js", "install Node.js: https://nodejs.org (or apt install nodejs)"),
    "uvx": ("uv's tool runner", "install uv, which brings uvx: curl -LsSf https://astral.sh/uv/install.sh | sh"),
    "uv": ("the uv package manager", "install uv: curl -LsSf https://astral.sh/uv/install.sh | sh"),
    "pipx": ("the pipx runner", "install pipx: python -m pip install --user pipx"),
    "bunx": ("Bun's package runner", "install Bun, which brings bunx: https://bun.sh"),
    "deno": ("the Deno runtime", "install Deno: https://deno.com"),
    "docker": ("Docker", "install Docker (https://docs.docker.com/get-docker/) and start its daemon"),
}


@dataclass(frozen=True)
class DoctorStep:
    """One step of a diagnosis.

    `name` is the step (``"command"``, ``"http"``, ...), `status` one of ``"ok"``, ``"failed"``,
    ``"skipped"`` and ``"warning"``, `finding` what it found (one line) and `hint` what to do
    about it (one line, ``""`` when there is nothing to do)."""

    name: str
    status: StepStatus
    finding: str
    hint: str = ""


@dataclass(frozen=True)
class DoctorReport:
    """The steps of one server's diagnosis, in order.

    `target` is ``"toolbox/server"``; the steps after a failed one are ``"skipped"``. Shown as a
    text table (repr), or as an HTML table in a notebook."""

    target: str
    steps: tuple[DoctorStep, ...]

    @property
    def ok(self) -> bool:
        """Whether no step failed (warnings and skipped steps allowed)."""
        return all(step.status != "failed" for step in self.steps)

    @property
    def failed(self) -> DoctorStep | None:
        """The first failed step, or None."""
        return next((step for step in self.steps if step.status == "failed"), None)

    def step(self, name: str) -> DoctorStep:
        """The step called `name` (KeyError if the diagnosis had none)."""
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)

    def __repr__(self) -> str:
        verdict = "ok" if self.ok else f"failed at {self.failed.name}" if self.failed else "failed"
        width = max((len(step.name) for step in self.steps), default=0)
        lines = [f"Doctor {self.target}: {verdict}"]
        for step in self.steps:
            line = f"  {MARKS.get(step.status, '?')} {step.name.ljust(width)}  {step.finding}"
            if step.hint:
                line += f"  → {step.hint}"
            lines.append(line.rstrip())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        verdict = "ok" if self.ok else "failed"
        rows = "".join(
            f'<tr class="wb-doctor-{html.escape(step.status)}"><td>{html.escape(MARKS.get(step.status, "?"))}</td>'
            f"<td>{html.escape(step.name)}</td><td>{html.escape(step.status)}</td>"
            f"<td>{html.escape(step.finding)}</td><td>{html.escape(step.hint)}</td></tr>"
            for step in self.steps
        )
        return (
            f'<table class="wb-doctor"><caption>Doctor {html.escape(self.target)}: {verdict}</caption>'
            "<thead><tr><th></th><th>step</th><th>status</th><th>finding</th><th>what to do</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
