"""One markdown table of every benchmark's figures, with the targets the issues set and the
machine it ran on. Pure: the benchmarks measure, this module only renders."""

from __future__ import annotations

import json
import operator
import os
import platform
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "<": operator.lt,
    ">": operator.gt,
}
_SHOWN = {">=": "≥", "<=": "≤", "<": "<", ">": ">"}


@dataclass(frozen=True)
class Target:
    """A figure's goal, as an issue states it: ``value <op> bound``."""

    op: str
    bound: float
    issue: int

    def __post_init__(self) -> None:
        if self.op not in _COMPARISONS:
            raise ValueError(f"a target compares with one of {sorted(_COMPARISONS)}: {self.op!r}")

    def met_by(self, value: float) -> bool:
        return _COMPARISONS[self.op](value, self.bound)


@dataclass(frozen=True)
class Figure:
    """One measured number: which benchmark, what it is, its value and unit."""

    benchmark: str
    name: str
    value: float
    unit: str
    target: Target | None = None


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int
    memory_gib: float
    system: str
    python: str
    services: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        parts = [
            f"{self.cpu}, {self.cores} cores, {self.memory_gib:.0f} GiB",
            self.system,
            f"Python {self.python}",
            *(f"{name} {version}" for name, version in self.services),
        ]
        return "; ".join(parts)


def render(figures: Sequence[Figure], machine: Machine, when: datetime) -> str:
    """The table, headed by the machine and the time of the run."""
    lines = [
        f"Measured {when:%Y-%m-%d %H:%M} UTC on {machine.describe()}.",
        "",
        "| benchmark | figure | value | target | met |",
        "|---|---|---|---|---|",
    ]
    for figure in figures:
        target, met = "", ""
        if figure.target is not None:
            bound = _number(figure.target.bound, figure.unit)
            target = f"{_SHOWN[figure.target.op]} {bound} (#{figure.target.issue})"
            met = "yes" if figure.target.met_by(figure.value) else "**no**"
        value = _number(figure.value, figure.unit)
        lines.append(f"| {figure.benchmark} | {figure.name} | {value} | {target} | {met} |")
    return "\n".join(lines) + "\n"


def render_columns(headers: Sequence[str], columns: Sequence[Sequence[Figure]]) -> str:
    """Figures measured alike on several set-ups, side by side: a row per figure (each column
    names them the same, in the same order, as its first does), a column per set-up; a value
    that misses its target is bold, and the target names every issue that set it."""
    lines = [
        f"| figure | {' | '.join(headers)} | target |",
        "|---|" + "---|" * len(headers) + "---|",
    ]
    for row in zip(*columns, strict=True):
        cells = []
        for figure in row:
            value = _number(figure.value, figure.unit)
            missed = figure.target is not None and not figure.target.met_by(figure.value)
            cells.append(f"**{value}**" if missed else value)
        targets = [figure.target for figure in row if figure.target is not None]
        shown = ""
        if targets:
            issues = ", ".join(f"#{issue}" for issue in dict.fromkeys(t.issue for t in targets))
            bound = _number(targets[0].bound, row[0].unit)
            shown = f"{_SHOWN[targets[0].op]} {bound} ({issues})"
        lines.append(f"| {row[0].name} | {' | '.join(cells)} | {shown} |")
    return "\n".join(lines) + "\n"


def _number(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.0f}%"
    if unit in ("×", "x"):
        return f"{value:.1f}×"
    if value != value:  # NaN: nothing was measured
        return "n/a"
    if abs(value) >= 100:
        shown = f"{value:,.0f}"
    else:
        decimals = 2 if abs(value) >= 1 else 3
        shown = f"{value:,.{decimals}f}".rstrip("0").rstrip(".")
    return f"{shown} {unit}".rstrip()


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as uptime shows them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def this_machine(services: Sequence[tuple[str, str]] = ()) -> Machine:
    """What this machine is, read from /proc and the tools on it."""
    return Machine(
        cpu=_cpu_model(),
        cores=os.cpu_count() or 0,
        memory_gib=_memory_gib(),
        system=_os_name(),
        python=platform.python_version(),
        services=(("Java", _java_version()), *services),
    )


def _cpu_model() -> str:
    text = _read("/proc/cpuinfo")
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown CPU"


def _memory_gib() -> float:
    match = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.MULTILINE)
    return int(match.group(1)) / 2**20 if match else 0.0


def _os_name() -> str:
    match = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', _read("/etc/os-release"), re.MULTILINE)
    return match.group(1) if match else platform.platform()


def _java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    except OSError:
        return "not found"
    match = re.search(r'version "([^"]+)"', done.stderr)
    return match.group(1) if match else "unknown"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def write_figures(path: Path, figures: Sequence[Figure]) -> None:
    """Hand a benchmark's figures to ``python -m bench`` (each benchmark runs in a process of
    its own: ingest changes the binlog library in place, and Spark sessions keep their JVM)."""
    path.write_text(json.dumps([asdict(figure) for figure in figures]))


def read_figures(path: Path) -> list[Figure]:
    figures = []
    for entry in json.loads(path.read_text()):
        target = entry.pop("target")
        figures.append(Figure(**entry, target=Target(**target) if target else None))
    return figures
