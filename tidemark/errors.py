"""The root of every error Tidemark raises on purpose.

Retry code branches on the class (transient or terminal), never on message text. Every message
names what is wrong and what to do about it, and never contains a secret.
"""

from __future__ import annotations

from collections.abc import Iterator


class TidemarkError(Exception):
    """Something the user can act on; the CLI prints the message as one line."""


class TransientError(TidemarkError):
    """May succeed if tried again later: a service still starting, a lost connection."""


class TerminalError(TidemarkError):
    """Will fail the same way until someone changes something: configuration, permissions."""


class ConfigError(TerminalError):
    """The user's configuration is wrong; the message says where and how to fix it."""


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (drivers add hints and SQL below it), or its
    class's name when it has none."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then the error it was raised from or during, and so on; an error raised
    ``from None`` ends the chain (it says what went wrong in its own words)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            current = current.__cause__
        else:
            current = None if current.__suppress_context__ else current.__context__
