"""A clean slate for the demo: the shop's rows, its lake tables, the scheduler's memory of its
windows and the reports on its topic, so every run starts from the same state."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from scheduler.reports_consumer import ConsumerSettings, forget_reports
from tidemark.app.pipeline import Pipeline
from tidemark.catalog import purge_namespace

logger = logging.getLogger(__name__)


def forget_pipeline(
    pipeline: Pipeline, namespaces: Iterable[str], output_namespaces: Iterable[str] = ()
) -> None:
    """Drop every lake table in ``namespaces`` (changelogs, mirrors, error tables) and in
    ``output_namespaces`` (the jobs' report tables),
    the scheduler's windows of the pipeline, and its commit report topic.

    Only for a pipeline that owns those namespaces and its topic, as the demo does: a new
    changelog reusing a name must not meet a window or report of the old one.
    """
    for namespace in namespaces:  # the sink tables, in the sink's own format
        for table in pipeline.sink_catalog.purge_namespace(namespace):
            logger.info("Dropped %s", table)
    for namespace in output_namespaces:  # the jobs' outputs, in the Iceberg catalog
        for table in purge_namespace(pipeline.output_catalog, namespace):
            logger.info("Dropped %s", table)
    config = pipeline.config
    store = pipeline.state_store()
    try:
        store.forget(config.pipeline.name, [sink.changelog for sink in pipeline.plan.sinks])
    finally:
        store.close()
    if config.tidemark.reports is not None:
        forget_reports(ConsumerSettings.from_reports(config.tidemark.reports, config.pipeline.name))
