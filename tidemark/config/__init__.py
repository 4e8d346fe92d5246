"""Pipeline files: Flink CDC 3.x YAML plus Tidemark's ``tidemark:`` block, read into typed models.

``load_pipeline(path)`` is the one entry point; everything else in Tidemark takes the
``PipelineConfig`` it returns. docs/architecture.md#pipeline-file-facts lists the format's facts.
"""

from __future__ import annotations

from tidemark.config.document import load_pipeline, parse_pipeline
from tidemark.config.errors import PipelineConfigError, Problem, Severity
from tidemark.config.model import (
    IcebergSink,
    JobConfig,
    MirrorOptions,
    MySqlSource,
    PaimonSink,
    PipelineConfig,
    PipelineSettings,
    RouteRule,
    TableOptions,
    TidemarkSettings,
    TransformRule,
    reveal,
)

__all__ = [
    "IcebergSink",
    "JobConfig",
    "MirrorOptions",
    "MySqlSource",
    "PaimonSink",
    "PipelineConfig",
    "PipelineConfigError",
    "PipelineSettings",
    "Problem",
    "RouteRule",
    "Severity",
    "TableOptions",
    "TidemarkSettings",
    "TransformRule",
    "load_pipeline",
    "parse_pipeline",
    "reveal",
]
