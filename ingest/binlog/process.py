"""The binlog decoded in a process of its own, so that two cores share the ingest.

One Python process cannot read a busy server's binlog and write it to the lake fast enough:
decoding takes about a third of each row's time and the assembly and Iceberg commits the
rest, all under one interpreter lock. ``ProcessBinlogReader`` runs ``BinlogReader`` in a child
process and hands its events to the caller exactly as ``BinlogReader`` would, in the same
order, with the same values and the same errors.

The child sends events in batches through a pipe: a batch goes when it is full or when the
server has nothing more to send yet, so a quiet stream is never held back. A thread here takes
the batches off the pipe as they come, so that the child goes on decoding while this process
commits; how far the child reads ahead is bounded by that queue (``_BATCHES_AHEAD``) and the
pipe. Events cross as plain tuples (``ingest.binlog.event_wire``), the structure of a table map
once, when the child first meets it. The child never commits anything: progress is the
caller's, and a new reader starts wherever the caller's last boundary is, as after any other
broken stream. A reading process can be started ahead of need (``warm``): a new interpreter
takes 0.15 s to import what it reads with.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Collection, Iterator
from multiprocessing.connection import Connection
from types import TracebackType

from ingest.binlog import event_wire
from ingest.binlog.events import BinlogEvent, Woken
from ingest.binlog.reader import BinlogReader, StreamInterruptedError
from ingest.gc_pacing import fewer_collections
from tidemark.lifeline import end_with_parent
from tidemark.source import BinlogPosition, SourceConnection

#: events per batch at most: large enough that a pipe write costs little per event
BATCH_EVENTS = 1024
#: a reading process started ahead of need (``warm``), and its pipe's reading end
_spare: tuple[subprocess.Popen[bytes], int] | None = None
_spare_lock = threading.Lock()
#: the pipe's size asked for (Linux lets any process ask up to 1 MiB)
_PIPE_BYTES = 1024 * 1024
#: batches taken off the pipe ahead of ingest, at most (about 250 KB each on sysbench)
_BATCHES_AHEAD = 256
#: how long a closed reader's process gets to end before it is killed, in seconds
_STOP_SECONDS = 5.0


#: the child's last message when the binlog ended (no ``follow``)
_END = "end"
#: the child's last message when reading failed: then the error and its traceback
_FAILED = "failed"


class _WakeUp:
    """A wake-up in a reader's inbox (``ProcessBinlogReader.wake``)."""


_WAKE_UP = _WakeUp()


class ProcessBinlogReader:
    """``BinlogReader(source, start, ...)``, read and decoded in a child process."""

    def __init__(
        self,
        source: SourceConnection,
        start: BinlogPosition,
        *,
        follow: bool = False,
        databases: Collection[str] | None = None,
        heartbeat_seconds: float | None = None,
    ) -> None:
        self._process, receive = _take_process()
        self._receive = Connection(receive, writable=False)
        #: the child's batches as they come (None: the pipe ended), and wake-ups
        self._inbox: queue.Queue[bytes | None | _WakeUp] = queue.Queue(maxsize=_BATCHES_AHEAD)
        #: set while a wake-up waits in the inbox: one is enough
        self._wake_queued = threading.Event()
        self._taker: threading.Thread | None = None
        settings = (source, start, follow, databases, heartbeat_seconds)
        assert self._process.stdin is not None
        try:
            with self._process.stdin as stdin:
                pickle.dump(settings, stdin)
        except OSError as error:  # the process died before it was told what to read
            self.close()
            raise StreamInterruptedError(
                f"the binlog reader process could not be started: {error}"
            ) from error

    @property
    def pid(self) -> int:
        """The reading process's id."""
        return self._process.pid

    def wake(self) -> None:
        """Have ``events`` yield a ``Woken`` (from any thread): at once if it waits for the
        next batch, else after the batches queued. One wake-up waits at a time: the loop it
        wakes sees everything that happened before it was yielded."""
        if self._wake_queued.is_set():
            return
        self._wake_queued.set()
        try:
            self._inbox.put_nowait(_WAKE_UP)
        except queue.Full:  # batches wait: the loop is awake for a while
            self._wake_queued.clear()

    def events(self) -> Iterator[BinlogEvent | Woken]:
        assert self._taker is None, "a reader's events are read once"
        self._taker = threading.Thread(target=self._take, name="binlog batches", daemon=True)
        self._taker.start()
        structures: event_wire.Structures = {}
        while True:
            message = self._inbox.get()
            if message is None:
                raise StreamInterruptedError(
                    f"the binlog reader process ended without a word (exit code "
                    f"{self._exit_code()}): killed, or out of memory? Reading resumes from the "
                    "last transaction boundary"
                )
            if isinstance(message, _WakeUp):
                self._wake_queued.clear()  # before the loop looks: a later wake queues again
                yield Woken()
                continue
            batch = event_wire.unpack(message)
            if batch == _END:
                return
            if isinstance(batch, tuple) and batch[0] == _FAILED:
                error, remote_traceback = batch[1], batch[2]
                raise error from _RemoteTraceback(remote_traceback)
            for item in batch:
                event = event_wire.decode(item, structures)
                if event is not None:
                    yield event

    def _take(self) -> None:
        """Takes the child's batches off the pipe as they come, so that the child goes on
        decoding while this process commits (the pipe holds only a few batches); None when
        the pipe ends."""
        while True:
            try:
                message: bytes | None = self._receive.recv_bytes()
            except (EOFError, OSError):
                message = None
            self._inbox.put(message)
            if message is None:
                return

    def _exit_code(self) -> int | None:
        try:
            return self._process.wait(_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            return None

    def __iter__(self) -> Iterator[BinlogEvent | Woken]:
        return self.events()

    def close(self) -> None:
        process = self._process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait()
        if self._taker is not None:
            # the pipe ends with the process: the taker stops at its end, once there is room
            # for what it still takes; the pipe is closed after it, never under its read
            while self._taker.is_alive():
                with contextlib.suppress(queue.Empty):
                    self._inbox.get(timeout=0.1)
        self._receive.close()

    def __enter__(self) -> ProcessBinlogReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def warm() -> None:
    """Start a reading process before it is needed: the next ``ProcessBinlogReader`` takes it.
    A new interpreter takes 0.15 s to import what it reads with; started before a pipeline's
    tables are onboarded (which takes longer), it is ready when the binlog is read. One spare
    at most; unused, it ends with this process."""
    global _spare
    with _spare_lock:
        if _spare is None or _spare[0].poll() is not None:
            _spare = _start_process()


def _take_process() -> tuple[subprocess.Popen[bytes], int]:
    """The spare reading process if one is ready, else a new one; and its pipe's reading end."""
    global _spare
    with _spare_lock:
        spare, _spare = _spare, None
    if spare is not None and spare[0].poll() is None:
        return spare
    if spare is not None:
        os.close(spare[1])
    return _start_process()


def _start_process() -> tuple[subprocess.Popen[bytes], int]:
    # A plain interpreter, not multiprocessing: its spawn and forkserver run the parent's
    # main script again in the child, and a fork would copy the locks of Kafka's, Spark's and
    # the scheduler's threads mid-use. The import path and then the settings cross on stdin
    # (the password stays off the command line), events on a pipe of their own (stdout stays
    # free for prints).
    receive, send = os.pipe()
    _widen(send)
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(send), str(os.getpid())],
            stdin=subprocess.PIPE,
            pass_fds=(send,),
        )
    finally:
        os.close(send)
    assert process.stdin is not None
    pickle.dump(sys.path, process.stdin)
    process.stdin.flush()
    return process, receive


def _widen(pipe: int) -> None:
    """Room in the pipe for a few batches (Linux gives 64 KiB, a quarter of one): the child
    then decodes the next batch while this process takes the last, instead of waiting for it
    to be read."""
    try:
        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (AttributeError, OSError):
        pass  # not Linux, or over /proc/sys/fs/pipe-max-size: slower, not wrong


class _RemoteTraceback(Exception):  # noqa: N818 - shown as the cause, not raised
    def __init__(self, text: str) -> None:
        super().__init__(f"\n\nIn the binlog reader process:\n{text}")


# --- the child ------------------------------------------------------------------------------

#: the child's program: the parent's import path first, then the settings, from stdin
_CHILD = (
    "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "from ingest.binlog.process import serve; serve(int(sys.argv[1]), int(sys.argv[2]))"
)


def serve(fd: int, parent: int) -> None:
    """The child's work: read the settings from stdin, send events down the pipe ``fd``; a
    spare that is never used ends when stdin does, and any child when ``parent`` does."""
    # Ctrl-C reaches the whole process group: ingest decides when its reader stops (it
    # commits what it holds first), not the signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a quiet stream would keep a child whose parent was killed waiting on the server for
    # ever, holding its binlog connection (issue 28)
    end_with_parent(parent)
    send = Connection(fd, readable=False)
    try:
        settings = pickle.load(sys.stdin.buffer)
    except EOFError:
        return
    with fewer_collections():
        _read(send, *settings)


def _read(
    send: Connection,
    source: SourceConnection,
    start: BinlogPosition,
    follow: bool,
    databases: Collection[str] | None,
    heartbeat_seconds: float | None,
) -> None:
    batch: list[event_wire.Item] = []
    structures: event_wire.Structures = {}

    def ship() -> None:
        if batch:
            send.send_bytes(event_wire.pack(batch))
            batch.clear()

    try:
        with BinlogReader(
            source,
            start,
            follow=follow,
            databases=databases,
            heartbeat_seconds=heartbeat_seconds,
            before_wait=ship,
        ) as reader:
            for event in reader.wire_events():
                if isinstance(event, tuple):  # made as items by the reading loop already
                    batch.append(event)
                else:
                    event_wire.encode(event, batch, structures)
                if len(batch) >= BATCH_EVENTS:
                    ship()
        ship()
        send.send_bytes(event_wire.pack(_END))
    except BaseException as error:  # noqa: BLE001 - every failure is the parent's to raise
        try:
            ship()  # what was read before the failure is good
            send.send_bytes(event_wire.pack((_FAILED, _picklable(error), traceback.format_exc())))
        except OSError:
            pass  # the parent has gone
    finally:
        send.close()


def _picklable(error: BaseException) -> BaseException:
    """The error itself when it crosses the pipe intact, else one of the same meaning."""
    try:
        copy = pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - any failure to pickle means "send a stand-in"
        copy = None
    if isinstance(copy, type(error)) and str(copy) == str(error):
        return error
    return RuntimeError(f"the binlog reader failed: {type(error).__name__}: {error}")
