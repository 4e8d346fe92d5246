"""Who a Tidemark process is, as other processes see it: the active ingest or scheduler of a
pipeline, or one of its standbys.

An instance says who it is in the SQL it runs while it holds or waits for its pipeline's
lease: a comment ``/* tidemark {...} */`` in its lease query on the source server (ingest), or
its ``application_name`` on the state database (the scheduler). So what ``tidemark status`` and
a waiting standby read is exactly the set of live processes: a process that dies takes its
connection, and so its entry, with it. And ``tidemark.writer`` in each changelog commit's
snapshot summary names the process that made it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, ValidationError

#: snapshot summary key of a changelog commit: the process that made it (``writer_id``)
WRITER_KEY = "tidemark.writer"

_TAG = re.compile(r"/\* tidemark (\{.*?\}) \*/")


class Role(StrEnum):
    INGEST = "ingest"
    SCHEDULER = "scheduler"


class State(StrEnum):
    ACTIVE = "active"
    STANDBY = "standby"


class Instance(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Role
    pipeline: str
    state: State
    host: str
    pid: int
    #: when it took this state: became active, or began to wait
    since: datetime
    #: what an active process waits for: ``waiting for the catalog since ...``
    waiting_for: str | None = None

    def tag(self) -> str:
        """This instance as an SQL comment (``/*`` and ``*/`` never occur in its JSON)."""
        text = self.model_dump_json().replace("/", "\\/")  # a valid JSON escape
        return f"/* tidemark {text} */"

    @classmethod
    def from_text(cls, text: str | None) -> Instance | None:
        """The instance an SQL text's tag describes, if it has one."""
        found = _TAG.search(text or "")
        if found is None:
            return None
        try:
            return cls.model_validate(json.loads(found.group(1)))
        except (ValueError, ValidationError):
            return None  # a tag of another Tidemark version, or somebody's own comment

    def describe(self) -> str:
        said = f"on {self.host} (pid {self.pid}) since {self.since:%Y-%m-%d %H:%M:%S} UTC"
        return said if self.waiting_for is None else f"{said}, {self.waiting_for}"


@dataclass(frozen=True)
class LeaseHolders:
    """Who holds a pipeline's lease (its ingest's, or its scheduler's), and who waits for it."""

    #: the active instance; a bare description when it does not say who it is right now
    active: Instance | str | None
    standbys: list[Instance] = field(default_factory=list)


def this_process(role: Role, pipeline: str, state: State, since: datetime) -> Instance:
    return Instance(
        role=role,
        pipeline=pipeline,
        state=state,
        host=socket.gethostname(),
        pid=os.getpid(),
        since=since.astimezone(UTC),
    )


@functools.cache
def writer_id() -> str:
    """This process, as ``tidemark.writer`` names it: ``host pid N``."""
    return f"{socket.gethostname()} pid {os.getpid()}"
