"""``tidemark verify`` (and the demo's verdict): one line per mirror, then the keys that differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tidemark.pipeline import MirrorVerification

#: keys listed per kind of difference; the counts are always complete
SHOWN_KEYS = 20


def verification_lines(results: Sequence[MirrorVerification]) -> list[str]:
    lines = []
    for result in results:
        verdict = result.verdict
        if verdict is None:
            lines.append(f"{result.sink}: no mirror to verify yet ({result.unavailable})")
            continue
        state = "OK" if verdict.mismatches == 0 else "MISMATCH"
        lines.append(
            f"{verdict.mirror}: {state}, {verdict.source_rows} source rows, "
            f"{len(verdict.missing)} missing, {len(verdict.extra)} extra, "
            f"{len(verdict.different)} different, {len(verdict.in_flight)} in flight"
        )
        for label, keys in (
            ("missing", verdict.missing),
            ("extra", verdict.extra),
            ("different", verdict.different),
        ):
            lines += [f"  {label}: {', '.join(map(repr, key))}" for key in keys[:SHOWN_KEYS]]
    return lines
