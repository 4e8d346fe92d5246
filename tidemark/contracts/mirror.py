"""What a mirror table says about itself: the windows it holds, in each merge commit's summary."""

from __future__ import annotations

from enum import StrEnum


class MirrorKey(StrEnum):
    """Keys a window merge writes into each mirror commit's snapshot summary.

    The mirror says itself which windows it holds, so re-running a window is a no-op and a
    retried job never applies one twice.
    """

    WINDOW_START = "tidemark.window-start"  # epoch ms, inclusive
    WINDOW_END = "tidemark.window-end"  # epoch ms, exclusive: the mirror is complete to here
    MERGED_ORDER = "tidemark.merged-order"  # the last changelog _tm_order applied
    SOURCE_WATERMARK = "tidemark.source-watermark"  # the changelog watermark merged up to
    CHANGELOG_SNAPSHOT = "tidemark.changelog-snapshot"  # the changelog snapshot merged up to
    #: a digest of what the merge derives the mirror's structure from (the changelog's schema,
    #: schema history and comment, the mirror's options): while it is unchanged, a window
    #: without changes may be stamped without a merge
    CHANGELOG_STRUCTURE = "tidemark.changelog-structure"


#: with ``mirror.deletes: keep``, true on a mirror row whose source row was deleted
MIRROR_DELETED_COLUMN = "_tm_deleted"
