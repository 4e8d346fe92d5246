"""``tidemark plan``: which tables a pipeline onboards, where to and what not, as text or JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tidemark.config import PipelineConfig
from tidemark.config.plan import Plan, Refusal
from tidemark.config.values import format_duration


def render(config: PipelineConfig, plan: Plan) -> str:
    source = config.source
    lines = [f"plan for {config.path} (mysql {source.username}@{source.hostname}:{source.port})"]
    sinks = {sink.name for sink in plan.sinks}
    lines.append("")
    lines.append(
        f"onboard: {_count(len({m.source for m in plan.onboarded}), 'table')} -> "
        f"{_count(len(sinks), 'Iceberg table')}"
    )
    lines += _columns(
        [
            (m.source, f"-> {m.sink}", f"key ({', '.join(m.key)})", f"from {m.key_origin}")
            for m in plan.onboarded
        ]
    )
    if plan.sinks:
        lines += ["", "Iceberg tables:"]
        for sink in plan.sinks:
            mirror = (
                f"mirror {sink.mirror} every {format_duration(sink.mirror_window)}"
                if sink.mirror
                else "no mirror"
            )
            lines.append(
                f"  {sink.name}: key ({', '.join(sink.key)}), "
                f"{_count(len(sink.sources), 'source table')}, {mirror}, "
                f"changelog {sink.changelog}"
            )
    lines += _section("cannot onboard", plan.refused)
    lines += _section("skipped", plan.skipped)
    if plan.blockers:
        lines += ["", "blocking problems:"] + [f"  {b}" for b in plan.blockers]
    if plan.notes:
        lines += ["", "notes:"] + [f"  {n}" for n in plan.notes]
    if config.tidemark.jobs:
        lines += ["", "jobs:"]
        for job in config.tidemark.jobs:
            lines.append(
                f"  {job.name}: every {format_duration(job.window)} after "
                f"{', '.join(job.inputs)}; runs {', '.join(p.name for p in job.sql)}"
            )
    return "\n".join(lines) + "\n"


def _section(title: str, items: Sequence[Refusal]) -> list[str]:
    if not items:
        return []
    return ["", f"{title}: {_count(len(items), 'table')}"] + _columns(
        [(item.table, item.reason) for item in items]
    )


def _columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  "
        + "  ".join(
            [cell.ljust(width) for cell, width in zip(row, widths, strict=False)] + [row[-1]]
        )
        for row in rows
    ]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def plan_json(config: PipelineConfig, plan: Plan) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            return [plain(item) for item in value]
        if hasattr(value, "total_seconds"):
            return format_duration(value)
        return value

    return {"version": 1, "file": str(config.path), "ok": plan.ok, **plain(plan)}
