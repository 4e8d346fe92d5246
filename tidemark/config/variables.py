"""``${VAR}`` and ``${VAR:-default}`` substitution from the environment, in any value.

Flink CDC has no substitution of its own (users ask for it to keep secrets out of files,
flink-cdc #3829), so this is Tidemark's addition. ``$${`` writes a literal ``${``. The default is
used when the variable is unset or empty, as in POSIX shells.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tidemark.config.secrets import is_secret_variable

_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_BODY = re.compile(rf"(?P<name>{_NAME})(?::-(?P<default>.*))?", re.DOTALL)

_FORMS = "write ${NAME} or ${NAME:-default} (NAME: letters, digits and _), or $${ for a literal ${"


@dataclass(frozen=True)
class Substituted:
    """A value after substitution, and what went into it."""

    value: str
    variables: tuple[str, ...]
    errors: tuple[str, ...]

    @property
    def secret(self) -> bool:
        """Whether a password-like variable contributed to the value."""
        return any(is_secret_variable(name) for name in self.variables)


def has_references(text: str) -> bool:
    return "${" in text


def substitute(text: str, environ: Mapping[str, str], *, secret: bool = False) -> Substituted:
    """Replace every reference in ``text``; problems are returned, not raised, to report all.

    ``secret``: the text is a secret's, so a malformed reference is not quoted past its name.
    """
    names: list[str] = []
    errors: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group("body")
        if body is None:
            errors.append(f"'${{' is not closed by '}}': {_FORMS}")
            return match.group(0)
        parsed = _BODY.fullmatch(body)
        if parsed is None:
            prefix = re.match(_NAME, body)
            if secret or (prefix is not None and is_secret_variable(prefix.group(0))):
                body = (prefix.group(0) if prefix else "") + "..."
            errors.append(f"'${{{body}}}' is not a variable reference: {_FORMS}")
            return match.group(0)
        name, default = parsed.group("name"), parsed.group("default")
        names.append(name)
        value = environ.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None:
            errors.append(
                f"environment variable {name} is not set and has no default: "
                f"set it, or write ${{{name}:-default}}"
            )
            return match.group(0)
        return value

    value = _REFERENCE.sub(replace, text)
    return Substituted(value, tuple(names), tuple(errors))
