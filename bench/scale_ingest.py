"""``tidemark ingest FILE`` under a measuring wrapper, for ``bench.scale_bench``.

Runs ingest exactly as the command does (``Pipeline.ingest``), after replacing a few of its
functions by timed calls of themselves, and writes what they did as JSON lines to ``--events``
(times are ``time.time()``, seconds since the epoch, so the parent's clock reads them):

- ``onboard``, ``bootstrap``, ``build_runner``: ``began``, ``ended`` (``tables`` for the
  bootstrap);
- ``streaming``: ``at``, when the first binlog event reached the assembler;
- ``commit``: one per changelog commit (``ChangelogTable.commit``): ``table``, ``wm`` (the
  watermark it stamped, ms), ``rows``, ``began``, ``ended``;
- ``flush``: one per flush of every waiting table at once (``IngestRunner._commit``: at a
  stop, a reconnect, ``flush-rows``), with tables: ``tables``, ``rows``, ``began``,
  ``ended``; tables otherwise commit one by one in the background (``commit`` events);
- ``watermark``: one per watermark report handed to Kafka (``KafkaReports.publish_watermark``):
  ``tables`` (the changelogs it names), ``wm``, ``at``;
- ``stopped``: the run's summary (``commits``, ``rows``, ``reason``) once it ended.

With ``--profile PATH``, a thread samples the main thread's stack every 10 ms (py-spy is not
installed on the build machines) and writes each sample to PATH as a JSON line: ``{"t": time,
"s": stack id}``, each stack's frames (outermost first) once, when first seen, as ``{"stack":
id, "frames": [...]}``. ``bench.scale_bench --profile`` sums them per phase.

Nothing in ingest changes, except with ``--commit-threads N``: ingest's commit pool then has N
threads for this run (an experiment: the pipeline file cannot set it). SIGTERM and SIGINT stop
the run at its next event (a heartbeat comes every second), as ``StopWhen.requested`` does.

``python -m bench.scale_ingest FILE --events PATH``
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, TextIO


class EventLog:
    """JSON lines, one per event, written through at once (the parent reads them live)."""

    def __init__(self, path: Path) -> None:
        self._file: TextIO = path.open("a", buffering=1)
        self._lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        line = json.dumps({"e": event, **fields})
        with self._lock:
            self._file.write(line + "\n")


def _timed(owner: Any, name: str, log: EventLog, event: str, **extra: Callable[..., Any]) -> None:
    """Replace ``owner.name`` by a call of itself that logs ``event`` with its start and end
    (and each ``extra`` key computed from the call's arguments)."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.time()
        try:
            return original(*args, **kwargs)
        finally:
            fields = {key: compute(*args, **kwargs) for key, compute in extra.items()}
            log.write(event, began=began, ended=time.time(), **fields)

    setattr(owner, name, timed)


def instrument(log: EventLog) -> None:
    """Time ingest's stages and commits; the first binlog event marks the start of streaming."""
    import ingest.launch as launch
    from ingest.bootstrap.bootstrapper import Bootstrapper
    from ingest.changelog.reports import KafkaReports
    from ingest.changelog.table import ChangelogTable
    from ingest.stream.assembler import ChangeAssembler
    from ingest.stream.runner import IngestRunner

    _timed(launch, "onboard", log, "onboard")
    _timed(launch, "build_runner", log, "build_runner")
    _timed(Bootstrapper, "run", log, "bootstrap", tables=lambda _self, sinks: len(sinks))

    on_event = ChangeAssembler.on_event

    def first_event(self: ChangeAssembler, event: Any) -> Any:
        log.write("streaming", at=time.time())
        ChangeAssembler.on_event = on_event  # type: ignore[method-assign]
        return on_event(self, event)

    ChangeAssembler.on_event = first_event  # type: ignore[method-assign]

    commit = ChangelogTable.commit

    def timed_commit(
        self: ChangelogTable, rows: Any, progress: Any, *args: Any, **kwargs: Any
    ) -> Any:
        began = time.time()
        snapshot = commit(self, rows, progress, *args, **kwargs)
        log.write(
            "commit",
            table=self.identifier,
            wm=progress.watermark_ms,
            rows=rows.num_rows,
            began=began,
            ended=time.time(),
        )
        return snapshot

    ChangelogTable.commit = timed_commit  # type: ignore[method-assign]

    commit_all = IngestRunner._commit

    def timed_flush(self: IngestRunner, flush: Any) -> None:
        if not flush.tables:
            commit_all(self, flush)
            return
        began = time.time()
        commit_all(self, flush)
        log.write(
            "flush",
            tables=len(flush.tables),
            rows=sum(len(table.changes) for table in flush.tables),
            began=began,
            ended=time.time(),
        )

    IngestRunner._commit = timed_flush  # type: ignore[method-assign]

    publish_watermark = KafkaReports.publish_watermark

    def logged_watermark(self: KafkaReports, report: Any) -> None:
        publish_watermark(self, report)
        log.write("watermark", tables=sorted(report.tables), wm=report.watermark_ms, at=time.time())

    KafkaReports.publish_watermark = logged_watermark  # type: ignore[method-assign]


def set_commit_threads(threads: int) -> None:
    """Give ingest's settings ``threads`` commit threads, whatever its options say."""
    from ingest.settings import IngestSettings

    from_options = IngestSettings.from_options

    def with_threads(options: Any, catalog_type: str = "jdbc") -> IngestSettings:
        return replace(from_options(options, catalog_type), commit_threads=threads)

    IngestSettings.from_options = with_threads  # type: ignore[method-assign]


class StackSampler:
    """A poor man's py-spy: the main thread's stack every ``interval`` seconds, to a file."""

    def __init__(self, path: Path, interval: float = 0.01) -> None:
        self._file: TextIO = path.open("a", buffering=1024 * 1024)
        self._interval = interval
        self._stacks: dict[tuple[str, ...], int] = {}
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._file.close()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            frame = sys._current_frames().get(self._main or 0)
            frames: list[str] = []
            while frame is not None:
                code = frame.f_code
                frames.append(f"{_short(code.co_filename)}:{code.co_name}")
                frame = frame.f_back
            stack = tuple(reversed(frames))
            known = self._stacks.get(stack)
            if known is None:
                known = self._stacks[stack] = len(self._stacks)
                self._file.write(json.dumps({"stack": known, "frames": stack}) + "\n")
            self._file.write(f'{{"t": {time.time():.3f}, "s": {known}}}\n')


def _short(filename: str) -> str:
    """A module's path from its package down (``pyiceberg/table/__init__.py``)."""
    parts = Path(filename).parts
    for anchor in ("site-packages", "main", "scale_head"):
        if anchor in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(anchor) :])
    return "/".join(parts[-2:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--events", type=Path, required=True)
    parser.add_argument("--max-seconds", type=float, help="stop after this many seconds")
    parser.add_argument("--profile", type=Path, help="sample the main thread's stack to here")
    parser.add_argument("--commit-threads", type=int, help="ingest's commit threads, this run")
    args = parser.parse_args()
    log = EventLog(args.events)
    stop = threading.Event()

    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    log.write("started", at=time.time())
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from ingest.stream.runner import StopWhen
    from tidemark.app.output.bootstrap_progress import BootstrapProgress
    from tidemark.app.pipeline import Pipeline

    instrument(log)
    if args.commit_threads is not None:
        set_commit_threads(args.commit_threads)
    log.write("imported", at=time.time())
    sampler = StackSampler(args.profile) if args.profile else None
    if sampler is not None:
        sampler.start()
    try:
        summary = Pipeline.open(args.file).ingest(
            StopWhen(args.max_seconds, None, stop), display=BootstrapProgress()
        )
    finally:
        if sampler is not None:
            sampler.close()
    log.write(
        "stopped",
        at=time.time(),
        commits=summary.commits,
        rows=summary.rows,
        reason=summary.stopped_because,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
