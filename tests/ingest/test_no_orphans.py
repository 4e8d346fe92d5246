"""No orphans: whatever kills ingest, its binlog reading process ends with it, and an ingest
started by ``tidemark run`` ends with the run (issue 28)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from tests.ingest.pipelines import write_pipeline
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

#: a reading process checks its parent twice a second; starting ingest takes a few seconds
DEADLINE_SECONDS = 60

pytestmark = pytest.mark.every_source


def _children(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return children


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended; only its parent has not collected it yet


def _reading_process(ingest: int) -> int:
    """The pid of ingest's binlog reading process, once it reads."""

    def found() -> list[int]:
        assert _alive(ingest), "ingest ended before it read the binlog"
        return [
            child
            for child in _children(ingest)
            if b"ingest.binlog.process" in Path(f"/proc/{child}/cmdline").read_bytes()
        ]

    return wait_until("ingest started its reading process", found, DEADLINE_SECONDS)[0]


@pytest.fixture
def quiet_pipeline(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> Path:
    """A pipeline whose table nobody writes: its reading process waits on the server."""
    with source.admin_source().connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.quiet (id INT PRIMARY KEY)")
    return write_pipeline(
        tmp_path / "quiet.yaml",
        source,
        endpoints.catalog,
        database=source_database,
        tables="quiet",
        namespace=namespace,
        server_id=server_id,
    )


def _ingest(pipeline: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tidemark.app.cli", "ingest", str(pipeline), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.timeout(180)
def test_the_reading_process_of_an_ingest_killed_with_sigkill_ends_too(
    quiet_pipeline: Path, catalog: Catalog
) -> None:
    ingest = _ingest(quiet_pipeline)
    try:
        reader = _reading_process(ingest.pid)
        ingest.send_signal(signal.SIGKILL)
        ingest.wait()
        wait_until("the orphaned reading process ended", lambda: not _alive(reader), 30)
    finally:
        ingest.kill()
        ingest.wait()


#: a stand-in for `tidemark run`: starts ingest as run does, says its pid, then waits
_RUN = """
import os, signal, subprocess, sys
ingest = subprocess.Popen(
    [sys.executable, "-m", "tidemark.app.cli", "ingest", sys.argv[1],
     "--parent-pid", str(os.getpid())],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
print(ingest.pid, flush=True)
signal.pause()  # until the test kills it
"""


@pytest.mark.timeout(180)
def test_an_ingest_started_by_a_run_ends_with_the_run_and_takes_its_reader_along(
    quiet_pipeline: Path, catalog: Catalog
) -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", _RUN, str(quiet_pipeline)], stdout=subprocess.PIPE, text=True
    )
    assert run.stdout is not None
    ingest = int(run.stdout.readline())
    try:
        reader = _reading_process(ingest)
        run.send_signal(signal.SIGKILL)
        run.wait()
        wait_until("ingest ended with its run", lambda: not _alive(ingest), 30)
        wait_until("the reading process ended", lambda: not _alive(reader), 30)
    finally:
        run.kill()
        run.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(ingest, signal.SIGKILL)
