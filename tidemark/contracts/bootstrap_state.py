"""How far a table's bootstrap has come, stored in each bootstrap commit's snapshot summary.

Key ``tidemark.bootstrap``, JSON::

    {"v": 1, "done": false,
     "tables": {"shop.orders_1": {"done": true, "after": null, "rows": 1000},
                "shop.orders_2": {"done": false, "after": [{"int": 5123}], "rows": 5123}}}

One entry per physical source table routed to the changelog table (with ``"key"``, the columns
``after`` is a value of, since issue 27), and ``errors_order``: the
last order key of the sink's error table whose rows this commit covers (error rows of chunks not
committed yet come after it, and a resumed bootstrap removes them before reading those chunks
again). ``after`` is the last key
committed (the next chunk starts after it). Key values keep their Python type through JSON so
the next page's query compares them as the server did. The newest Tidemark commit of a table
carries this key while its bootstrap runs; the one that finishes it says ``"done": true``, and
stream commits after it carry no key at all.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tidemark.errors import TerminalError

BOOTSTRAP_KEY = "tidemark.bootstrap"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class SourceTableBootstrap:
    done: bool = False
    after: tuple[Any, ...] | None = None
    rows: int = 0
    #: the columns ``after`` is a value of; None in states written before it was kept
    key: tuple[str, ...] | None = None


@dataclass(frozen=True)
class BootstrapState:
    tables: Mapping[str, SourceTableBootstrap] = field(default_factory=dict)
    #: the error table's last order key when this state was committed; None before it was kept
    errors_order: int | None = None

    @property
    def done(self) -> bool:
        return all(table.done for table in self.tables.values())

    def table(self, source_table: str) -> SourceTableBootstrap:
        return self.tables.get(source_table, SourceTableBootstrap())

    def with_table(self, source_table: str, state: SourceTableBootstrap) -> BootstrapState:
        return replace(self, tables={**self.tables, source_table: state})

    @property
    def rows(self) -> int:
        return sum(table.rows for table in self.tables.values())

    def summary(self) -> dict[str, str]:
        document = {
            "v": FORMAT_VERSION,
            "done": self.done,
            "tables": {
                name: {
                    "done": table.done,
                    "after": None if table.after is None else [_encode(v) for v in table.after],
                    "rows": table.rows,
                    **({} if table.key is None else {"key": list(table.key)}),
                }
                for name, table in sorted(self.tables.items())
            },
        }
        if self.errors_order is not None:
            document["errors_order"] = self.errors_order
        return {BOOTSTRAP_KEY: json.dumps(document, separators=(",", ":"))}

    @classmethod
    def from_summary(cls, summary: Mapping[str, str]) -> BootstrapState | None:
        text = summary.get(BOOTSTRAP_KEY)
        if text is None:
            return None
        try:
            document = json.loads(text)
            if int(document["v"]) > FORMAT_VERSION:
                raise TerminalError(
                    f"the bootstrap was started by a newer Tidemark (format {document['v']}); "
                    "upgrade Tidemark to resume it"
                )
            tables = {
                str(name): SourceTableBootstrap(
                    done=bool(entry["done"]),
                    after=None
                    if entry["after"] is None
                    else tuple(_decode(v) for v in entry["after"]),
                    rows=int(entry["rows"]),
                    key=None if entry.get("key") is None else tuple(map(str, entry["key"])),
                )
                for name, entry in document["tables"].items()
            }
            errors_order = document.get("errors_order")
        except (KeyError, ValueError, TypeError) as error:
            raise TerminalError(
                f"a changelog snapshot has a malformed {BOOTSTRAP_KEY} ({error}): drop the "
                "changelog table and bootstrap it again"
            ) from error
        return cls(tables, None if errors_order is None else int(errors_order))


def _encode(value: Any) -> dict[str, Any]:
    if isinstance(value, bool | int):
        return {"int": int(value)}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, float):
        return {"float": value}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"time_us": value // dt.timedelta(microseconds=1)}
    raise TypeError(f"cannot record a key value of type {type(value).__name__}: {value!r}")


def _decode(tagged: Mapping[str, Any]) -> Any:
    ((kind, value),) = tagged.items()
    decoders: dict[str, Callable[[Any], Any]] = {
        "int": int,
        "str": str,
        "bytes": base64.b64decode,
        "decimal": decimal.Decimal,
        "float": float,
        "datetime": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "time_us": lambda us: dt.timedelta(microseconds=us),
    }
    return decoders[kind](value)
