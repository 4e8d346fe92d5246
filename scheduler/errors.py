"""The scheduler's errors: a root class, split into transient and terminal by the mixins of
``tidemark.errors`` (retry code branches on the class, never on the message)."""

from __future__ import annotations

from tidemark.errors import TidemarkError


class SchedulerError(TidemarkError):
    """Something about scheduling windows went wrong; the message names what and the fix."""
