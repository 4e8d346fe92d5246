"""``tidemark verify`` (and the demo's verdict): one line per mirror, then the keys that differ."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tidemark.app.pipeline import MirrorVerification

#: keys listed per kind of difference; the counts are always complete
SHOWN_KEYS = 20


def verification_lines(result: MirrorVerification) -> list[str]:
    verdict = result.verdict
    if verdict is None:
        return [f"{result.sink}: no mirror to verify yet ({result.unavailable})"]
    state = "OK" if verdict.mismatches == 0 else "MISMATCH"
    lines = [
        f"{result.mirror}: {state}, {verdict.source_rows} source rows, "
        f"{len(verdict.missing)} missing, {len(verdict.extra)} extra, "
        f"{len(verdict.different)} different, {len(verdict.in_flight)} in flight"
    ]
    for label, keys in (
        ("missing", verdict.missing),
        ("extra", verdict.extra),
        ("different", verdict.different),
    ):
        lines += [f"  {label}: {', '.join(map(repr, key))}" for key in keys[:SHOWN_KEYS]]
    return lines
