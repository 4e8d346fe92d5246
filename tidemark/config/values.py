"""Text to typed values with Flink's rules: integers, booleans, durations, time zones, id ranges,
and Tidemark's own: windows, names.

Each parser raises ``BadValue`` with what the value must be; the caller adds the key, the value
(unless it is a secret) and the line. Option declarations name them as their ``parse``.
"""

from __future__ import annotations

import difflib
import re
import zoneinfo
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path

from tidemark.config.patterns import split_table_id

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)


class BadValue(ValueError):  # noqa: N818 - a value, not a failure of ours
    """``message`` says what the value must be; ``hint`` how to get there."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


_INTEGER = re.compile(r"[+-]?[0-9]+")
_YAML11_BOOLEANS = {"yes", "no", "on", "off", "y", "n", "1", "0"}


def text(value: str) -> str:
    """A value taken as written (an option of type string)."""
    return value


def closest(name: str, candidates: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def one_of(choices: Sequence[str]) -> Callable[[str], str]:
    """A parser of one of ``choices``, in any case, returned as spelled in ``choices``."""

    def parse(text: str) -> str:
        for choice in choices:
            if choice.lower() == text.lower():
                return choice
        lowered = [choice.lower() for choice in choices]
        guess = closest(text.lower(), lowered)
        hint = f"did you mean '{choices[lowered.index(guess)]}'?" if guess else ""
        raise BadValue(f"must be one of {', '.join(choices)}", hint)

    return parse


def parse_int(text: str, bounds: tuple[int, int] = INT_RANGE) -> int:
    """Java's ``Integer.parseInt``: decimal digits, so ``0123`` is 123 (never octal 83)."""
    stripped = text.strip()
    if not _INTEGER.fullmatch(stripped):
        raise BadValue("must be a whole number")
    value = int(stripped)
    low, high = bounds
    if not low <= value <= high:
        raise BadValue(f"must be a whole number from {low} to {high}")
    return value


def whole_number(
    bounds: tuple[int, int] = INT_RANGE, *, above: int | None = None
) -> Callable[[str], int]:
    """A parser of Java ints (or longs, with ``LONG_RANGE``); ``above``: upstream's "must larger
    than"."""

    def parse(text: str) -> int:
        value = parse_int(text, bounds)
        if above is not None and value <= above:
            raise BadValue(f"must be greater than {above}")
        return value

    return parse


def at_least_one(text: str) -> int:
    number = parse_int(text)
    if number < 1:
        raise BadValue("must be at least 1")
    return number


def parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise BadValue("must be a number") from None


def parse_ca_file(text: str) -> str:
    """A PEM file of CA certificates, as an absolute path or a ``file:`` URL (Connector/J's
    ``trustCertificateKeyStoreUrl`` takes a URL)."""
    path = Path(text.removeprefix("file://").removeprefix("file:")).expanduser()
    if not path.is_absolute():
        raise BadValue("must be an absolute path (or file: URL) of a PEM file")
    try:
        content = path.read_bytes()
    except OSError as error:
        raise BadValue(f"must be a file Tidemark can read ({error.strerror})") from None
    if b"-----BEGIN CERTIFICATE-----" not in content:
        raise BadValue(
            "must be a PEM file of CA certificates (Tidemark reads no JKS or PKCS12 store)",
            "export it from a Java truststore with "
            "keytool -exportcert -rfc -alias <alias> -keystore <store> -file ca.pem",
        )
    return str(path)


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in _YAML11_BOOLEANS:
        raise BadValue(
            "must be true or false",
            "Flink CDC reads only true and false, not YAML 1.1's yes/no/on/off",
        )
    raise BadValue("must be true or false")


_DURATION = re.compile(r"(?P<number>[0-9]+)\s*(?P<unit>\S*)")
_DURATION_UNITS: dict[str, timedelta] = {}
for _labels, _unit in (
    (("d", "day", "days"), timedelta(days=1)),
    (("h", "hour", "hours"), timedelta(hours=1)),
    (("min", "m", "minute", "minutes"), timedelta(minutes=1)),
    (("s", "sec", "secs", "second", "seconds"), timedelta(seconds=1)),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), timedelta(milliseconds=1)),
    (("µs", "micro", "micros", "microsecond", "microseconds"), timedelta(microseconds=1)),
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), timedelta(0)),
):
    for _label in _labels:
        _DURATION_UNITS[_label] = _unit

DURATION_FORMS = "a number and a unit such as '30 s', '5 min', '1 h' or '1 d'"


def parse_duration(text: str, *, unit_required: bool = False) -> timedelta:
    """Flink's duration syntax: ``30s``, ``5 min``, ``1 h``; a bare number is milliseconds.

    ``unit_required`` is for Tidemark's own keys, where a bare number is more likely a mistake
    (``window: 5``) than five milliseconds.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise BadValue(f"must be a duration: {DURATION_FORMS}")
    number, unit = int(match.group("number")), match.group("unit").lower()
    if not unit:
        if unit_required:
            raise BadValue(f"must be a duration with a unit: {DURATION_FORMS}")
        return timedelta(milliseconds=number)
    if unit not in _DURATION_UNITS:
        raise BadValue(f"has an unknown time unit {unit!r}: use d, h, min, s or ms")
    if unit in ("ns", "nano", "nanos", "nanosecond", "nanoseconds"):
        return timedelta(microseconds=number // 1000)
    return number * _DURATION_UNITS[unit]


def duration_with_unit(text: str) -> timedelta:
    return parse_duration(text, unit_required=True)


def positive_duration(text: str) -> timedelta:
    duration = parse_duration(text, unit_required=True)
    if duration <= timedelta(0):
        raise BadValue("must be longer than zero")
    return duration


DAY = timedelta(days=1)
MIN_WINDOW = timedelta(minutes=1)


def parse_window(text: str) -> timedelta:
    """A window length: at least a minute, in whole seconds, dividing a day evenly."""
    window = parse_duration(text, unit_required=True)
    if window < MIN_WINDOW:
        raise BadValue("must be at least 1 min: each window is a Spark job")
    if window % timedelta(seconds=1) or DAY % window:
        raise BadValue(
            "must divide a day evenly, so windows line up with midnight",
            "use for example 1 min, 5 min, 10 min, 15 min, 30 min, 1 h, 2 h, 6 h or 1 d",
        )
    return window


def format_duration(value: timedelta) -> str:
    """The largest whole unit: ``5 min``, ``1 h``, ``90 s``."""
    micros = value // timedelta(microseconds=1)
    for label, size in (("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000)):
        if micros and micros % size == 0:
            return f"{micros // size} {label}"
    if micros % 1_000_000 == 0:
        return f"{micros // 1_000_000} s"
    return f"{micros // 1000} ms"


_OFFSET = re.compile(r"(?:UTC|GMT|UT)?[+-](?P<h>[0-9]{1,2})(?::?(?P<m>[0-9]{2})(?::?[0-9]{2})?)?")


def parse_zone(text: str) -> str:
    """A zone id as Java's ``ZoneId.of`` takes it: a region (``Asia/Shanghai``) or an offset."""
    zone = text.strip()
    if zone in ("Z", "UTC", "GMT", "UT"):
        return zone
    offset = _OFFSET.fullmatch(zone)
    if offset is not None:
        if int(offset.group("h")) > 18 or int(offset.group("m") or 0) > 59:
            raise BadValue("is an offset beyond +/-18:00")
        return zone
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise BadValue(
            "must be a time zone id such as 'UTC', 'Asia/Shanghai' or '+08:00'"
        ) from None
    return zone


def parse_local_zone(text: str) -> str:
    """``pipeline.local-time-zone``: a zone id, or ``systemDefault``."""
    if text == "systemDefault":
        return text
    try:
        return parse_zone(text)
    except BadValue as bad:
        raise BadValue(f"{bad.message}, or systemDefault") from None


def parse_server_id(text: str) -> tuple[int, int]:
    """``5400`` or ``5400-5408``, as Flink CDC's ``ServerIdRange.from``."""
    parts = text.split("-")
    if len(parts) > 2:
        raise BadValue("must be a replica id such as 5400, or a range such as 5400-5408")
    try:
        ids = [parse_int(part, (1, 2**32 - 1)) for part in parts]
    except BadValue:
        raise BadValue(
            "must be a replica id from 1 to 4294967295 such as 5400, or a range such as 5400-5408"
        ) from None
    start, end = ids[0], ids[-1]
    if start > end:
        raise BadValue("is a range whose start is above its end", f"write {end}-{start}")
    return start, end


def split_list(text: str, separator: str = ",") -> tuple[str, ...]:
    """``a, b ,c`` -> ``("a", "b", "c")``; empty items are dropped."""
    return tuple(item.strip() for item in text.split(separator) if item.strip())


_IDENTIFIER = re.compile(r"[A-Za-z_$0-9][A-Za-z0-9_$]*")


def parse_columns(text: str) -> tuple[str, ...]:
    """A comma-separated list of column names (``id, region``), as transform primary-keys."""
    columns = split_list(text)
    if not columns:
        raise BadValue("must name at least one column, comma-separated")
    for column in columns:
        if not _IDENTIFIER.fullmatch(column.strip("`")):
            raise BadValue(
                f"must be column names separated by commas; {column!r} is not a column name"
            )
    return tuple(column.strip("`") for column in columns)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifier(text: str) -> str:
    if not _NAME.fullmatch(text):
        raise BadValue("must be a name of letters, digits and _")
    return text


def table_id(text: str) -> str:
    if split_table_id(text) is None:
        raise BadValue("must be a database.table name (an Iceberg namespace and table)")
    return text
