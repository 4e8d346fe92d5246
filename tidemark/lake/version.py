"""The one PyIceberg version ``tidemark.lake`` is written against, checked when it is imported.

``tidemark.lake`` reaches into PyIceberg's private API (names starting with ``_``: a table's
``_do_commit``, a transaction's retry, the Avro writers' internals, ``pyiceberg.io.pyarrow``'s
helpers). A private name can change its meaning in any release without a word in the changelog,
so an upgrade that kept the names but not their behaviour would write wrong tables silently.
An exact version turns that into an error at start-up, before anything is written.
"""

from __future__ import annotations

import importlib.metadata

from tidemark.errors import TerminalError

#: the PyIceberg release whose private API ``tidemark.lake`` was written and tested against
SUPPORTED_PYICEBERG = "0.12.0"


class PyIcebergVersionError(TerminalError):
    """The installed PyIceberg is not the one ``tidemark.lake`` is written against."""


def check_pyiceberg(installed: str | None = None) -> None:
    """Raise ``PyIcebergVersionError`` unless ``installed`` (by default the installed
    PyIceberg's version) is ``SUPPORTED_PYICEBERG``."""
    found = installed if installed is not None else importlib.metadata.version("pyiceberg")
    if found == SUPPORTED_PYICEBERG:
        return
    raise PyIcebergVersionError(
        f"pyiceberg {found} is installed, but Tidemark's commits (tidemark/lake/) use "
        f"PyIceberg's private API as it is in {SUPPORTED_PYICEBERG}: install "
        f"pyiceberg=={SUPPORTED_PYICEBERG} (pin it), or port tidemark/lake/ to {found} and "
        "change SUPPORTED_PYICEBERG in tidemark/lake/version.py"
    )
