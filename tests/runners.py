"""``make_runner``: an ingest run over the stack's catalog, built as ``tidemark ingest`` does."""

from __future__ import annotations

from typing import Protocol

from pyiceberg.catalog import Catalog

from ingest.bootstrap.display import BootstrapDisplay
from ingest.changelog.catalogs import IcebergSinkCatalog, SinkCatalog
from ingest.launch import build_runner
from ingest.settings import IngestSettings
from ingest.stream.runner import Clock, IngestRunner, ReportSink
from tidemark.config import PipelineConfig, reveal


class MakeRunner(Protocol):
    def __call__(
        self,
        config: PipelineConfig,
        reports: ReportSink | None = None,
        settings: IngestSettings | None = None,
        display: BootstrapDisplay | None = None,
        clock: Clock | None = None,
    ) -> IngestRunner: ...


def runner_factory(catalog: Catalog | SinkCatalog) -> MakeRunner:
    """Runners over ``catalog`` (PyIceberg's, or a sink catalog of any format): without commit
    reports unless given, with the settings of the file's ``tidemark.ingest`` block unless
    given, as ingest itself takes them."""
    lake = IcebergSinkCatalog(catalog) if isinstance(catalog, Catalog) else catalog

    def make(
        config: PipelineConfig,
        reports: ReportSink | None = None,
        settings: IngestSettings | None = None,
        display: BootstrapDisplay | None = None,
        clock: Clock | None = None,
    ) -> IngestRunner:
        settings = settings or IngestSettings.from_options(
            config.tidemark.ingest, reveal(config.sink.catalog_properties).get("type", "")
        )
        if clock is None:
            return build_runner(config, lake, reports, settings, display)
        return build_runner(config, lake, reports, settings, display, clock)

    return make
