"""Which keys and variables hold secrets, and masking them out of anything we print.

A key is secret when its name contains a password-like word anywhere (``password``,
``catalog.properties.jdbc.password``, ``s3.secret-access-key``, ``token``, ``credential`` ...). A
``${VAR}`` whose name is password-like (``MYSQL_PASSWORD``) makes the value it lands in secret too,
whatever the key. Secret values never appear in messages, logs, plans or exports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_SECRET_WORDS = (
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "credential",
    "jaas",
    "private-key",
    "private_key",
    "privatekey",
    "shared-key",
    "account.key",
)

#: ``scheme://user:password@host``: the password part of a URL's user information.
_URL_PASSWORD = re.compile(r"(?P<head>//[^/:@\s]+:)[^@/\s]+(?=@)")

MASK = "***"

#: Secret values shorter than this are not searched for in messages: masking every "a" in a
#: message would make it unreadable, and such a value is not a usable secret anyway.
_MIN_MASKED_LENGTH = 4


def is_secret_key(key: str) -> bool:
    """Whether the value of option ``key`` is a secret (``password``, ``*.token`` ...)."""
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def is_secret_variable(name: str) -> bool:
    """Whether environment variable ``name`` holds a secret (``MYSQL_PASSWORD``, ``API_TOKEN``)."""
    return is_secret_key(name.replace("_", "-"))


#: ``?password=...`` / ``;password=...``: secret parameters of JDBC and other URLs.
_URL_PARAMETER = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&;\s'\"]+)")


def mask_url_passwords(text: str) -> str:
    """Mask the user-information password and secret parameters of any URL in ``text``."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _URL_PARAMETER.sub(
        lambda m: m.group("head") + MASK if is_secret_key(m.group("name")) else m.group(0), text
    )


@dataclass
class Redactor:
    """Masks known secret values, and the passwords of URLs, in text meant for people."""

    secrets: set[str] = field(default_factory=set)

    def add(self, values: Iterable[str]) -> None:
        self.secrets.update(v for v in values if len(v) >= _MIN_MASKED_LENGTH)

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return mask_url_passwords(text)
