"""What our Kafka clients say about Kafka: one line per outage, not one per connection attempt.

librdkafka logs every connection that fails and hands the same failure to the client's
``error_cb``; while Kafka is away that is dozens of lines a second (a consumer tries again every
50 ms), repeated at each reconnect. A ``KafkaClientLog`` is given to each client as its
``logger`` and ``error_cb`` (``config()``) and turns what it hears into Kafka's ``OutageLog``
(``tidemark.outages``):

- every broker down (``_ALL_BROKERS_DOWN``) opens an outage, said once, then once a minute;
  failed connections (``_TRANSPORT``, ``_RESOLVE``, ``_TIMED_OUT``) keep it open while it
  lasts, and are debug lines otherwise: one broker of several restarting is not Kafka away;
- the client's owner calls ``answered`` at each success (a delivery, a message read, the
  topic's metadata): the outage, if there was one, is over, said once;
- any other error is Kafka refusing us (credentials, TLS, authorisation, a missing topic, a
  message too large): an ERROR line naming the fix, once, then at most once a minute while it
  recurs;
- librdkafka's own lines: those of one connection (``FAIL``, ``REQTMOUT``) at DEBUG, since their
  error comes through ``error_cb``; the others at their level, at most one a minute for each
  facility.

Free of ``confluent_kafka``, so that ``ingest.changelog.reports`` and
``scheduler.reports_consumer`` (each package's only module that imports it) share it. Errors are
told apart by librdkafka's error names (``KafkaError.name()``), which are part of its API.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from tidemark.outages import REMIND_SECONDS, OutageLog

#: every broker the client knows is down: Kafka is unavailable
_ALL_BROKERS_DOWN = "_ALL_BROKERS_DOWN"
#: a connection to one broker failed; librdkafka connects again by itself
_CONNECTION_FAILED = frozenset({"_TRANSPORT", "_RESOLVE", "_TIMED_OUT"})
#: errors of a call that went unanswered
_UNANSWERED = _CONNECTION_FAILED | {_ALL_BROKERS_DOWN}
#: librdkafka's log facilities of one connection's failure, which reaches ``error_cb`` too
_PER_CONNECTION = frozenset({"FAIL", "REQTMOUT"})

_SECURITY = (
    "check the pipeline's tidemark.reports.kafka.* security settings "
    "(security.protocol, sasl.*, ssl.*)"
)
_MISSING_TOPIC = (
    "create the topic: ingest creates it when it starts, and the broker may refuse to create "
    "it on first use"
)
#: what to do about an error Kafka answers with, by librdkafka's name for it
FIXES = {
    "_AUTHENTICATION": _SECURITY,
    "SASL_AUTHENTICATION_FAILED": _SECURITY,
    "_SSL": _SECURITY,
    "TOPIC_AUTHORIZATION_FAILED": "allow the pipeline's Kafka user the topic in the broker's ACLs",
    "GROUP_AUTHORIZATION_FAILED": (
        "allow the pipeline's Kafka user its consumer group in the broker's ACLs"
    ),
    "CLUSTER_AUTHORIZATION_FAILED": "allow the pipeline's Kafka user the cluster in its ACLs",
    "UNKNOWN_TOPIC_OR_PART": _MISSING_TOPIC,
    "_UNKNOWN_TOPIC": _MISSING_TOPIC,
    "MSG_SIZE_TOO_LARGE": "raise the topic's max.message.bytes",
    "_MSG_SIZE_TOO_LARGE": "raise tidemark.reports.kafka.message.max.bytes",
}
_NO_FIX = "Tidemark tries again; if it lasts, the broker's log says more"


def fix_for(name: str) -> str:
    """What to do about Kafka's error ``name`` (``KafkaError.name()``)."""
    return FIXES.get(name, _NO_FIX)


class ClientError(Protocol):
    """What a client hands its ``error_cb``: confluent_kafka's ``KafkaError``."""

    def name(self) -> builtins.str: ...

    def str(self) -> builtins.str: ...


class KafkaClientLog:
    """The ``logger`` and ``error_cb`` of one component's Kafka clients (a producer, and the
    admin client and consumer beside it), over that component's ``OutageLog`` of Kafka.

    ``client`` names them in error lines ("commit reports"); ``action`` says what the
    component does while Kafka is away (``OutageLog.down``).
    """

    def __init__(
        self,
        outages: OutageLog,
        logger: logging.Logger,
        *,
        client: str,
        action: str,
        remind_seconds: float = REMIND_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.outages = outages
        self._logger = logger
        self._client = client
        self._action = action
        self._remind_seconds = remind_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._said: dict[str, float] = {}  # when (clock()) each line was last said
        self._last_failure: str | None = None

    def config(self) -> dict[str, Any]:
        """librdkafka settings that send its log lines and errors here."""
        return {"logger": self, "error_cb": self.on_error}

    # -- what the client reports ---------------------------------------------------------

    def log(self, level: int, msg: str, *args: object) -> None:
        """One of librdkafka's log lines (it calls ``logger.log(level, "%s [%s] %s",
        facility, client name, text)``)."""
        facility = str(args[0]) if args else ""
        if level > logging.DEBUG and (
            facility in _PER_CONNECTION or not self.due(f"librdkafka {facility}")
        ):
            level = logging.DEBUG
        self._logger.log(level, msg, *args)

    def on_error(self, error: ClientError) -> None:
        """An error librdkafka reports (``error_cb``); it goes on retrying by itself."""
        name, detail = error.name(), error.str()
        if name == _ALL_BROKERS_DOWN:
            # its own text ("1/1 brokers are down", "0/2 ..." too) says less than the
            # failure before it, when there was one
            self._last_failure = self._last_failure or "every broker is down"
            self.outages.down(self._last_failure, self._action)
        elif name in _CONNECTION_FAILED:
            self._last_failure = detail
            if self.outages.is_down:
                self.outages.down(detail, self._action)
            else:
                self._logger.debug("A Kafka connection failed; librdkafka retries: %s", detail)
        else:
            self._last_failure = detail  # what an outage that follows is about
            self.refused(name, detail)

    # -- what the component saw ----------------------------------------------------------

    def answered(self) -> None:
        """Kafka did what was asked (a delivery, a message read, metadata)."""
        self._last_failure = None
        self.outages.up()

    def unavailable(self, detail: str) -> None:
        """A call to Kafka failed for want of an answer (it timed out, no broker is up)."""
        self._last_failure = detail
        self.outages.down(detail, self._action)

    def failed(self, error: ClientError, doing: str) -> None:
        """A call to Kafka, ``doing`` what it says, raised ``error``: unanswered (an
        outage), or refused."""
        detail = f"{doing}: {error.str()}"
        if error.name() in _UNANSWERED:
            self.unavailable(detail)
        else:
            self.refused(error.name(), detail)

    def still_waiting(self) -> None:
        """Work waits for Kafka since the outage began and nothing succeeded since: a
        reminder when one is due, between librdkafka's errors (it repeats one only every
        30 s)."""
        if self.outages.is_down and self._last_failure is not None:
            self.outages.down(self._last_failure, self._action)

    def refused(self, name: str, detail: str) -> None:
        """Kafka answered with error ``name``: say so with its fix, once a minute at most."""
        if self.due(f"error {name}"):
            self._logger.error(
                "Kafka error for %s: %s (%s); %s", self._client, detail, name, fix_for(name)
            )
        else:
            self._logger.debug("Kafka error for %s again: %s (%s)", self._client, detail, name)

    def due(self, what: str) -> bool:
        """Whether a line about ``what`` may be said now: the first time, then once a
        ``remind_seconds`` (a true answer notes that it is said)."""
        with self._lock:
            now = self._clock()
            said = self._said.get(what)
            if said is not None and now - said < self._remind_seconds:
                return False
            self._said[what] = now
            return True
