"""``pipeline:``: Flink CDC 3.x ``PipelineOptions``. Upstream ignores unknown keys here, so a typo
(``schema.change.behaviour``) silently changes nothing; Tidemark reports it."""

from __future__ import annotations

from tidemark.config.declaration import Option, options_of
from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode
from tidemark.config.model import PipelineSettings
from tidemark.config.options import OptionSet, check_options
from tidemark.config.values import parse_duration

_FLINK_RUNTIME = "has no effect in Tidemark: it is a setting of Flink's runtime"

PIPELINE_OPTIONS = OptionSet(
    what="the pipeline block",
    handled_elsewhere=frozenset({"user-defined-function", "model"}),
    options=(
        *options_of(PipelineSettings),
        Option("operator.uid.prefix", no_effect=_FLINK_RUNTIME),
        Option("schema.operator.uid", no_effect=_FLINK_RUNTIME),
        Option("schema-operator.rpc-timeout", parse=parse_duration, no_effect=_FLINK_RUNTIME),
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
    return PipelineSettings(**options.given(PipelineSettings), options=options.raw)
