"""The one place a ``rich`` Console is made for a stream, and renderables are written with it.

On a terminal the Console has colour and the terminal's width, and live displays redraw in
place. Anywhere else (a log file, a pipe, CI, a test's ``StringIO``) it has no colour and no
control codes, and a width no line reaches, so what it writes is plain lines that scripts and
tests can read, laid out as they were before ``rich``.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console, RenderableType

#: wide enough that no table or line is ever wrapped in plain output
PLAIN_WIDTH = 10_000


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def console_for(stream: TextIO, terminal: bool | None = None, width: int | None = None) -> Console:
    """A Console writing to ``stream``; ``terminal`` None asks the stream itself (environment
    variables such as FORCE_COLOR do not turn a log into a terminal), ``width`` None is the
    terminal's own width."""
    if terminal is None:
        terminal = is_terminal(stream)
    # markup off: table names and windows ("[12:00, 12:05)") are text, never style tags
    if terminal:
        return Console(
            file=stream,
            force_terminal=True,
            width=width,
            markup=False,
            emoji=False,
            highlight=False,
        )
    return Console(
        file=stream,
        force_terminal=False,
        force_interactive=False,
        width=width or PLAIN_WIDTH,
        color_system=None,
        no_color=True,
        markup=False,
        emoji=False,
        highlight=False,
    )


def plain_text(renderable: RenderableType, width: int = PLAIN_WIDTH) -> str:
    """``renderable`` as plain lines, each without the spaces a table pads its last column
    with, and ending in a newline."""
    import io

    console = console_for(io.StringIO(), terminal=False, width=width)
    with console.capture() as captured:
        console.print(renderable)
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def write(stream: TextIO, renderable: RenderableType, terminal: bool | None = None) -> None:
    """Print ``renderable`` on ``stream``: styled on a terminal, else as ``plain_text``."""
    if terminal is None:
        terminal = is_terminal(stream)
    if terminal:
        console_for(stream, terminal=True).print(renderable)
    else:
        stream.write(plain_text(renderable))
    stream.flush()
