"""Each option of a pipeline file is declared once: on the model field that holds its value.

``option()`` makes that field. The field's type and default are the option's; the ``Option`` in
its metadata says how the file spells the key, how its text becomes the value and what it means.
The readers (``tidemark.config.blocks`` for the ``tidemark:`` block, ``tidemark.config.options``
for Flink CDC's flat blocks), the keys each block accepts, the defaults other packages start from
(``default_of``) and the reference in docs/configuration.md all come from these declarations, so
adding an option is adding a field. An option Tidemark accepts but does not use (upstream's Flink
tuning) has no field: its ``Option`` alone, in its block's ``OptionSet``, is its declaration.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from pydantic_core import PydanticUndefined

if TYPE_CHECKING:
    from tidemark.config.fields import Reader
    from tidemark.config.loader import Node

#: a single value's text to the option's value; raises ``BadValue`` saying what it must be
Parse = Callable[[str], Any]
#: a value that is not one scalar (a list, a mapping); returns None after reporting problems
Read = Callable[["Reader", "Node", str], Any]


@dataclass(frozen=True)
class Option:
    """How one option is written in the pipeline file, read from it, and what it means."""

    #: as written in the file; empty for the field's name with '-' for '_'
    key: str = ""
    doc: str = ""
    #: for a single value (at most one of parse and read)
    parse: Parse | None = None
    #: for anything else; a field with neither is a nested block of its model's options
    read: Read | None = None
    #: a block that may be written as one value instead, setting this option of the block
    #: (``mirror: false``)
    shorthand: str | None = None
    #: the default as people read it, where the field's default value does not say it (a None
    #: that means "the block's window"), or where it comes from
    default_text: str | None = None
    #: for a mapping of names to blocks: what a name is ("table" shows as ``tables.<table>``)
    entry: str | None = None
    #: the file must give it: a field without a default, unless ``default_text`` says where
    #: the default comes from (filled in by ``declared``)
    required: bool = False
    #: why it does nothing in Tidemark (accepted so upstream files work unchanged)
    no_effect: str | None = None


def option(
    default: Any = PydanticUndefined,
    *,
    doc: str,
    key: str = "",
    parse: Parse | None = None,
    read: Read | None = None,
    shorthand: str | None = None,
    default_text: str | None = None,
    entry: str | None = None,
) -> Any:
    """A model field that is an option of the pipeline file (``Any``, like pydantic's ``Field``,
    so it type-checks as the field's default)."""
    if parse is not None and read is not None:
        raise TypeError(f"option {key or doc!r}: give parse or read, not both")
    field = Field(default, description=doc)
    field.metadata.append(
        Option(
            key=key,
            doc=doc,
            parse=parse,
            read=read,
            shorthand=shorthand,
            default_text=default_text,
            entry=entry,
        )
    )
    return field


@dataclass(frozen=True)
class Declared:
    """An option and the model field that holds its value."""

    attribute: str
    #: with its key and ``required`` filled in
    option: Option
    #: the field's type, without ``| None``
    annotation: Any
    #: PydanticUndefined when there is none
    default: Any

    @property
    def key(self) -> str:
        return self.option.key

    @property
    def block(self) -> type[BaseModel] | None:
        """The model of a nested block of options, when the option is one."""
        if self.option.parse or self.option.read:
            return None
        if isinstance(self.annotation, type) and issubclass(self.annotation, BaseModel):
            return self.annotation
        return None

    @property
    def entries(self) -> type[BaseModel] | None:
        """The model of each entry of a mapping of names to blocks (``tables``, ``jobs``)."""
        if self.option.entry is None:
            return None
        args = [arg for arg in typing.get_args(self.annotation) if arg is not Ellipsis]
        if not (args and isinstance(args[-1], type) and issubclass(args[-1], BaseModel)):
            raise TypeError(f"option {self.key!r} names its entries but holds no blocks")
        return args[-1]


@functools.cache
def declared(model: type[BaseModel]) -> tuple[Declared, ...]:
    """The options ``model`` declares, in field order (the order messages list them in)."""
    result = []
    for attribute, field in model.model_fields.items():
        found = [item for item in field.metadata if isinstance(item, Option)]
        if not found:
            continue  # a value Tidemark derives (a pattern's regexes), not an option
        option_ = found[0]
        default = PydanticUndefined if field.is_required() else field.get_default()
        option_ = replace(
            option_,
            key=option_.key or attribute.replace("_", "-"),
            required=field.is_required() and option_.default_text is None,
        )
        result.append(Declared(attribute, option_, _without_none(field.annotation), default))
    return tuple(result)


def keys_of(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(item.key for item in declared(model))


def options_of(model: type[BaseModel]) -> tuple[Option, ...]:
    return tuple(item.option for item in declared(model))


def default_of(model: type[BaseModel], attribute: str) -> Any:
    """The declared default of ``model``'s option ``attribute``: for settings elsewhere that
    start from the pipeline file's defaults rather than restate them."""
    field = model.model_fields[attribute]
    if field.is_required():
        raise KeyError(f"{model.__name__}.{attribute} has no default")
    return field.get_default(call_default_factory=True)


def what_of(model: type[BaseModel]) -> str:
    """How messages name a block of ``model``'s options (its ``title``: "ingest options")."""
    title = model.model_config.get("title")
    if not title:
        raise TypeError(f"{model.__name__} reads a block of options but has no title")
    return title


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation
