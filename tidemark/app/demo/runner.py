"""``tidemark demo`` from start to verdict.

1. the local stack comes up and the shop is created afresh, with existing rows;
2. ingest starts as a child process (``tidemark ingest``: bootstrap, then the binlog), the
   scheduler and its Spark session in a thread here, and the shoppers in another;
3. the live view redraws what the pipeline has reached until the duration is over;
4. the shoppers stop; the scheduler runs until every mirror and job has a window that ends
   after the last write; then ``tidemark verify`` compares each mirror with the shop.

Logs of ingest, the scheduler and Spark go to files under the stack's ``logs`` directory, so
the terminal shows the view alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tidemark.app.demo.live_view import DemoFrame, LiveView
from tidemark.app.demo.report_rows import REPORT_TABLE, latest_report
from tidemark.app.demo.shop import ShopSize, create_shop
from tidemark.app.demo.workload import ShopWorkload, WorkloadSettings
from tidemark.errors import TidemarkError
from tidemark.stack.endpoints import Storage

if TYPE_CHECKING:
    from tidemark.app.pipeline import Pipeline
    from tidemark.source import SourceConnection

logger = logging.getLogger(__name__)

#: the pipeline file the demo runs, unless told otherwise
DEMO_PIPELINE = Path(__file__).resolve().parents[3] / "configs" / "demo.yaml"
#: the demo's pipeline file on each of the stack's lakes (``tidemark demo --storage``)
DEMO_PIPELINES: dict[Storage, Path] = {
    "local": DEMO_PIPELINE,
    "s3": DEMO_PIPELINE.with_name("demo_s3.yaml"),
}
#: the demo on a Paimon sink (on local disk; its reports in the stack's Iceberg catalog)
DEMO_PAIMON_PIPELINE = DEMO_PIPELINE.with_name("demo_paimon.yaml")

#: exit code of a demo stopped by Ctrl-C, as a shell reports SIGINT
EXIT_INTERRUPTED = 130


class DemoFailedError(TidemarkError):
    """A part of the demo stopped or did not catch up; the message says which and where its
    log is."""


@dataclass(frozen=True)
class DemoSettings:
    pipeline_file: Path = DEMO_PIPELINE
    duration: timedelta = timedelta(minutes=5)
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)
    shop: ShopSize = field(default_factory=ShopSize)
    #: how often the live view is redrawn
    refresh: timedelta = timedelta(seconds=2)
    #: Spark master URL; None runs a local session
    spark_master: str | None = None
    #: windows run at once (two cores run the demo comfortably with two)
    max_workers: int = 2


@dataclass(frozen=True)
class Clocks:
    """Time as the demo reads it: ``elapsed`` for pacing, ``now`` for watermark lags."""

    elapsed: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


def run_demo(
    settings: DemoSettings,
    out: TextIO,
    interactive: bool,
    interrupted: threading.Event,
    clocks: Clocks = Clocks(),  # noqa: B008 - frozen
) -> int:
    """Run the demo, showing it on ``out``; ``interrupted`` (Ctrl-C) ends it early without a
    verdict. Returns the exit code: 0 when every mirror equals its source table."""
    from tidemark.stack.settings import StackSettings
    from tidemark.stack.stack import Stack

    stack = Stack(StackSettings.from_env())
    _say(out, "starting the local stack (a first run installs it)")
    stack.up()
    endpoints = stack.endpoints()
    os.environ.update(endpoints.pipeline_environment())  # the ${...} of configs/demo.yaml
    logs = stack.settings.logs_dir
    logs.mkdir(parents=True, exist_ok=True)
    _say(out, f"logs of ingest, the scheduler and Spark: {logs}/demo*.log")
    # py4j says goodbye at interpreter exit, after stderr is back on the terminal
    logging.getLogger("py4j").setLevel(logging.WARNING)
    with _stderr_to(logs / "demo.log"):
        demo = _Demo(settings, endpoints.mariadb.admin_source(), logs, out, clocks)
        return demo.run(interactive, interrupted)


class _Demo:
    def __init__(
        self,
        settings: DemoSettings,
        admin: SourceConnection,
        logs: Path,
        out: TextIO,
        clocks: Clocks,
    ) -> None:
        from tidemark.app.pipeline import Pipeline

        self._settings = settings
        self._admin = admin
        self._logs = logs
        self._out = out
        self._clocks = clocks
        self._pipeline = Pipeline.open(settings.pipeline_file)
        self._config = self._pipeline.config
        self._catalog = self._pipeline.output_catalog  # where the report is

    def run(self, interactive: bool, interrupted: threading.Event) -> int:
        from tidemark.app.output.verify import verification_lines

        _say(self._out, "creating the shop and clearing the lake of earlier demo runs")
        self._reset()
        ingest = self._start_ingest()
        shoppers_stop, scheduler_stop = threading.Event(), threading.Event()
        scheduler = _SchedulerThread(self._pipeline, self._settings, scheduler_stop)
        workload = ShopWorkload(self._admin, self._settings.workload, self._clocks.elapsed)
        shoppers = threading.Thread(
            target=workload.run, args=(shoppers_stop,), name="demo-shoppers", daemon=True
        )
        parts = _Parts(ingest, scheduler, workload, self._logs)
        view = LiveView(self._out, interactive)
        try:
            _say(self._out, "starting Spark, the scheduler and the shoppers")
            scheduler.start()
            shoppers.start()
            started = self._clocks.elapsed()
            show = _Screen(lambda phase: self.frame(workload, phase, started), view)
            end = self._clocks.elapsed() + self._settings.duration.total_seconds()
            show.phase = "bootstrap, then streaming; the shoppers are busy"
            while self._clocks.elapsed() < end:
                parts.check()
                show()
                if interrupted.wait(self._settings.refresh.total_seconds()):
                    view.close()  # the message goes below the last frame
                    _say(self._out, "interrupted: stopped without a verdict")
                    return EXIT_INTERRUPTED
            shoppers_stop.set()
            shoppers.join()
            parts.check()
            last_write = self._server_now()
            show.phase = f"shoppers stopped at {last_write:%H:%M:%S}; the last windows run"
            patience = self._catch_up_seconds()
            deadline = self._clocks.elapsed() + patience
            while not self._windows_cover(last_write):
                if self._clocks.elapsed() > deadline:
                    raise DemoFailedError(
                        f"the windows did not pass {last_write:%H:%M:%S} within {patience:.0f} s "
                        f"of the last write; see `tidemark status "
                        f"{self._settings.pipeline_file}` and the logs in {self._logs}"
                    )
                parts.check()
                show()
                if interrupted.wait(self._settings.refresh.total_seconds()):
                    view.close()  # the message goes below the last frame
                    _say(self._out, "interrupted: stopped without a verdict")
                    return EXIT_INTERRUPTED
            show.phase = "every window has run; verifying the mirrors against the shop"
            show(final=True)
        finally:
            view.close()
            shoppers_stop.set()
            scheduler_stop.set()
            _stop(ingest)
            scheduler.join()
        failures = 0
        for result in self._pipeline.verify():
            self._out.write("".join(line + "\n" for line in verification_lines(result)))
            failures += result.failed
        _say(
            self._out,
            "every mirror equals its source table"
            if failures == 0
            else f"{failures} mirror(s) differ from their source tables, listed above",
        )
        return 0 if failures == 0 else 1

    def frame(self, workload: ShopWorkload, phase: str, started: float) -> DemoFrame:
        from tidemark.app.output.status import status_view

        now = self._clocks.now()
        return DemoFrame(
            elapsed=timedelta(seconds=self._clocks.elapsed() - started),
            duration=self._settings.duration,
            phase=phase,
            workload=workload.counts,
            status=status_view(self._pipeline.status(now), now),
            report=latest_report(self._catalog),
        )

    def _reset(self) -> None:
        from tidemark.app.demo.reset import forget_pipeline

        conn = self._admin.connect()
        try:
            create_shop(conn, self._settings.shop)
        finally:
            conn.close()
        config = self._config
        plan = self._pipeline.current_plan()  # of the shop just created
        if not plan.ok:
            raise DemoFailedError(
                f"{config.path} does not plan against the shop; run `tidemark plan {config.path}`"
            )
        namespaces = {sink.name.partition(".")[0] for sink in plan.sinks}
        forget_pipeline(self._pipeline, sorted(namespaces), [REPORT_TABLE.partition(".")[0]])

    def _start_ingest(self) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "tidemark.app.cli",
            "ingest",
            str(self._settings.pipeline_file),
        ]
        with (self._logs / "demo-ingest.log").open("ab") as log:
            return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def _server_now(self) -> datetime:
        """The shop's clock: binlog event times come from it, not from this machine's."""
        conn = self._admin.connect()
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT UNIX_TIMESTAMP(NOW(6))")
                (seconds,) = cursor.fetchone()
        finally:
            conn.close()
        return datetime.fromtimestamp(float(seconds), UTC)

    def _catch_up_seconds(self) -> float:
        """Two windows (the open one and the next, in case a merge retries) and two minutes."""
        return 2 * self._config.tidemark.window.total_seconds() + 120.0

    def _windows_cover(self, instant: datetime) -> bool:
        """Whether every mirror and job has a succeeded window ending after ``instant``."""
        rows = self._pipeline.windows(self._clocks.now())
        if rows is None:
            return False
        return all(row.last_succeeded and row.last_succeeded.end > instant for row in rows)


class _Screen:
    """Draws a frame of the demo's current ``phase``; call it to redraw."""

    def __init__(self, frame_of: Callable[[str], DemoFrame], view: LiveView) -> None:
        self._frame_of = frame_of
        self._view = view
        self.phase = ""

    def __call__(self, final: bool = False) -> None:
        self._view.show(self._frame_of(self.phase), final=final)


class _SchedulerThread(threading.Thread):
    """``tidemark schedule`` for the demo's pipeline, on its own Spark session; an error ends
    the thread and is kept for the demo to report."""

    def __init__(self, pipeline: Pipeline, settings: DemoSettings, stop: threading.Event) -> None:
        super().__init__(name="demo-scheduler", daemon=True)
        self._pipeline = pipeline
        self._settings = settings
        self._stop_event = stop
        self.error: BaseException | None = None

    def run(self) -> None:
        from spark_jobs.arguments import SparkTarget
        from tidemark.app.pipeline import SchedulerOptions, run_scheduler

        try:
            options = SchedulerOptions(
                max_workers=self._settings.max_workers, app_name="tidemark-demo"
            )
            run_scheduler(
                [self._pipeline],
                SparkTarget(self._settings.spark_master),
                self._stop_event,
                options,
            )
        except Exception as error:  # reported by the demo, which then fails
            logger.exception("The demo's scheduler stopped")
            self.error = error


@dataclass(frozen=True)
class _Parts:
    """The demo's moving parts, checked on every redraw: one that stops ends the demo."""

    ingest: subprocess.Popen[bytes]
    scheduler: _SchedulerThread
    workload: ShopWorkload
    logs: Path

    def check(self) -> None:
        code = self.ingest.poll()
        if code is not None:
            raise DemoFailedError(
                f"ingest stopped with exit code {code}; see {self.logs / 'demo-ingest.log'}"
            )
        if not self.scheduler.is_alive():
            raise DemoFailedError(
                f"the scheduler stopped ({self.scheduler.error}); see {self.logs / 'demo.log'}"
            )
        if self.workload.error is not None:
            raise DemoFailedError(
                f"the shoppers stopped: {self.workload.error}; see {self.logs / 'demo.log'}"
            )


def _stop(ingest: subprocess.Popen[bytes]) -> None:
    """SIGTERM: ingest commits what it holds and exits; a demo must not leave it running."""
    if ingest.poll() is None:
        ingest.terminate()
    try:
        ingest.wait(timeout=60)
    except subprocess.TimeoutExpired:
        ingest.kill()
        ingest.wait()


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Send file descriptor 2 to ``path``: the JVM behind Spark and the Python loggers write
    there, and either would tear the live view apart."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("ab") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _say(out: TextIO, message: str) -> None:
    out.write(f"tidemark demo: {message}\n")
    out.flush()
