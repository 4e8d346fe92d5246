"""Tables added to a running pipeline bootstrap in a thread while the others stream.

The streaming tables go on from their own positions at once; the new tables' rows are not
routed meanwhile (``deferred``). When the bootstrap has committed its last chunk, the runner
hands the new tables over at a transaction boundary (``IngestRunner``): their progress joins
the assembler, which reads again from the earliest of their snapshot positions, skipping per
table what each already holds, exactly as after a restart. The other tables' freshness pauses
only for that re-read, not for the whole bootstrap.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence

from ingest.bootstrap.bootstrapper import Bootstrapper, BootstrapStopped, SinkBootstrap
from tidemark.contracts.progress import TableProgress

logger = logging.getLogger(__name__)


class BackgroundBootstrap:
    def __init__(
        self,
        bootstrapper: Bootstrapper,
        sinks: Sequence[SinkBootstrap],
        deferred: set[tuple[str, str]],
        error_progress: Callable[[str], Mapping[str, TableProgress]],
    ) -> None:
        """``deferred`` holds the (database, table) pairs whose rows wait for the hand-over;
        ``error_progress(sink)`` is the progress of the sink's error table, if it has one."""
        self._bootstrapper = bootstrapper
        self._sinks = list(sinks)
        self._deferred = deferred
        self._error_progress = error_progress
        self._result: dict[str, TableProgress] | None = None
        self._error: BaseException | None = None
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tidemark-bootstrap", daemon=True)

    @property
    def sinks(self) -> list[str]:
        return [sink.sink for sink in self._sinks]

    def start(self) -> None:
        logger.info("Bootstrapping %s while the other tables stream", ", ".join(sorted(self.sinks)))
        self._thread.start()

    def stop(self) -> None:
        """The run stops before the hand-over: the bootstrap stops at its next chunk (what it
        committed stays; the next run resumes after it) and this waits for it."""
        self._bootstrapper.stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def hand_over(self) -> dict[str, TableProgress]:
        """The new tables' progress (and their error tables'), once finished; their rows are
        routed from here on. Raises what stopped the bootstrap."""
        assert self.finished.is_set()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        self._deferred.clear()
        return self._result

    def _run(self) -> None:
        try:
            progress = self._bootstrapper.run(self._sinks)
            for sink in self.sinks:
                progress.update(self._error_progress(sink))
            self._result = progress
        except BootstrapStopped:
            logger.info("Bootstrap of %s stopped with the run", ", ".join(sorted(self.sinks)))
        except BaseException as error:  # raised in the runner's thread at the hand-over
            self._error = error
        finally:
            self.finished.set()
