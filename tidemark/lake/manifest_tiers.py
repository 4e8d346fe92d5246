"""Which manifests an append merges, so a changelog's manifest list stays short.

A fast append adds one manifest per commit, and every later commit lists them all again: at
450 commits (15 minutes of a busy table between two maintenance runs) writing the list was most
of a commit's CPU, 17 ms against 5 ms at 10 (issue 25). Java's Iceberg merges small manifests
at commit (``commit.manifest-merge.enabled``, on by default there, off in PyIceberg), rewriting
them all into one each time there are a hundred. Here manifests are merged in tiers instead, as
a log-structured merge does: a tier holds manifests of fewer than ``FAN_IN ** (tier + 1)``
files, and ``FAN_IN`` manifests of one tier (and one partition spec) become one of the next.
The list then holds at most ``FAN_IN - 1`` manifests per tier, a few dozen for a table of
millions of files, and each file is rewritten once per tier, not at every merge.

The merged manifest holds the same files as ``EXISTING`` entries with their own snapshot ids and
sequence numbers, as Java's merge does; the snapshots that added them keep their own manifest
lists, so what a snapshot added can still be read from it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pyiceberg.manifest import ManifestContent, ManifestFile

#: manifests of one tier merged into one of the next
FAN_IN = 16


def tier(manifest: ManifestFile) -> int:
    """0 for fewer than ``FAN_IN`` live files, 1 for fewer than ``FAN_IN ** 2``, and so on."""
    files = (manifest.added_files_count or 0) + (manifest.existing_files_count or 0)
    level = 0
    while files >= FAN_IN ** (level + 1):
        level += 1
    return level


def to_merge(manifests: Sequence[ManifestFile]) -> list[list[ManifestFile]]:
    """The groups of data manifests to merge, each into one: a tier's manifests of one spec
    once there are ``FAN_IN`` of them."""
    tiers: dict[tuple[int, int], list[ManifestFile]] = defaultdict(list)
    for manifest in manifests:
        if manifest.content == ManifestContent.DATA:
            tiers[(manifest.partition_spec_id, tier(manifest))].append(manifest)
    return [group for group in tiers.values() if len(group) >= FAN_IN]
