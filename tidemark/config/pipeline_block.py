"""``pipeline:``: Flink CDC 3.x ``PipelineOptions``. Upstream ignores unknown keys here, so a typo
(``schema.change.behaviour``) silently changes nothing; Tidemark reports it."""

from __future__ import annotations

from typing import Any

from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode
from tidemark.config.model import PipelineSettings, SchemaChangeBehavior
from tidemark.config.options import Kind, Option, OptionSet, check_options
from tidemark.config.patterns import RouteMode
from tidemark.config.values import BadValue, parse_zone

_FLINK_RUNTIME = "has no effect in Tidemark: it is a setting of Flink's runtime"

PIPELINE_OPTIONS = OptionSet(
    what="the pipeline block",
    handled_elsewhere=frozenset({"user-defined-function", "model"}),
    options=(
        Option("name"),
        Option("parallelism", Kind.INT, above=0),
        Option(
            "schema.change.behavior",
            Kind.CHOICE,
            choices=tuple(behavior.value for behavior in SchemaChangeBehavior),
        ),
        Option("local-time-zone"),
        Option("route-mode", Kind.CHOICE, choices=tuple(mode.value for mode in RouteMode)),
        Option("execution.runtime-mode", Kind.CHOICE, choices=("STREAMING", "BATCH")),
        Option("operator.uid.prefix", no_effect=_FLINK_RUNTIME),
        Option("schema.operator.uid", no_effect=_FLINK_RUNTIME),
        Option("schema-operator.rpc-timeout", Kind.DURATION, no_effect=_FLINK_RUNTIME),
        Option("sink.partitioning.strategy", no_effect=_FLINK_RUNTIME),
        Option(
            "transform.decimal.precision.mode",
            no_effect="has no effect in Tidemark: transforms are evaluated by Spark SQL",
        ),
    ),
)

_NO_FLINK_CODE = (
    "is not supported: Tidemark evaluates transforms with Spark SQL and cannot load Flink "
    "{what}; remove it and use Spark SQL functions in projection and filter"
)


def read_pipeline(reader: Reader, node: MapNode | None, path: str) -> PipelineSettings:
    if node is None:
        return PipelineSettings()
    options = check_options(reader, node, path, PIPELINE_OPTIONS)
    for key, what in (("user-defined-function", "UDF classes"), ("model", "AI models")):
        if node.get(key) is not None:
            reader.error(node.get(key), child(path, key), _NO_FLINK_CODE.format(what=what))
    fields: dict[str, Any] = {"options": options.raw}
    for attribute, key in (
        ("name", "name"),
        ("parallelism", "parallelism"),
        ("route_mode", "route-mode"),
        ("runtime_mode", "execution.runtime-mode"),
    ):
        if options.get(key) is not None:
            fields[attribute] = options.get(key)
    behavior = options.get("schema.change.behavior")
    if behavior is not None:
        fields["schema_change_behavior"] = SchemaChangeBehavior(behavior)
    zone = reader.value(node.get("local-time-zone"), child(path, "local-time-zone"), _local_zone)
    if zone is not None:
        fields["local_time_zone"] = zone
    parallelism = options.get("parallelism")
    if parallelism is not None and parallelism > 1:
        reader.warning(
            node.get("parallelism"),
            child(path, "parallelism"),
            "has no effect in Tidemark: one ingest process reads each source's binlog in order",
        )
    return PipelineSettings(**fields)


def _local_zone(text: str) -> str:
    if text == "systemDefault":
        return text
    try:
        return parse_zone(text)
    except BadValue as bad:
        raise BadValue(f"{bad.message}, or systemDefault") from None
