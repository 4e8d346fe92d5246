"""The fence around PyIceberg's internals refuses a PyIceberg it was not written against
(``tidemark.lake.version``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tidemark.lake.version import SUPPORTED_PYICEBERG, PyIcebergVersionError, check_pyiceberg


def test_the_installed_pyiceberg_is_the_one_the_fence_is_written_against() -> None:
    check_pyiceberg()


def test_another_pyiceberg_is_refused_with_the_version_found_the_one_supported_and_the_fix() -> (
    None
):
    with pytest.raises(PyIcebergVersionError) as refused:
        check_pyiceberg("0.13.0")

    message = str(refused.value)
    assert "pyiceberg 0.13.0 is installed" in message
    assert f"private API as it is in {SUPPORTED_PYICEBERG}" in message
    assert f"install pyiceberg=={SUPPORTED_PYICEBERG} (pin it)" in message


def test_importing_the_fence_with_another_pyiceberg_fails_at_once() -> None:
    run = _with_pyiceberg_0_13("import tidemark.lake.snapshots")
    assert run.returncode != 0
    assert "PyIcebergVersionError: pyiceberg 0.13.0 is installed" in run.stderr


def test_the_cli_loads_and_refuses_another_pyiceberg_where_it_opens_a_catalog() -> None:
    """Where the CLI prints Tidemark's errors as one line with the fix, not a traceback."""
    run = _with_pyiceberg_0_13(
        "import tidemark.app.cli\n"
        "from tidemark.catalog import load_catalog\n"
        "from tidemark.errors import TidemarkError\n"
        "try:\n"
        "    load_catalog('c', {'type': 'jdbc', 'uri': 'jdbc:sqlite::memory:'})\n"
        "except TidemarkError as error:\n"
        "    print(error)\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("pyiceberg 0.13.0 is installed")


def _with_pyiceberg_0_13(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run in a Python that takes the installed PyIceberg for 0.13.0."""
    pretend = (
        "import importlib.metadata as metadata\n"
        "installed = metadata.version\n"
        "metadata.version = lambda name: '0.13.0' if name == 'pyiceberg' else installed(name)\n"
    )
    root = Path(__file__).resolve().parents[2]  # this tree's tidemark, not an installed one
    return subprocess.run(
        [sys.executable, "-c", pretend + code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
