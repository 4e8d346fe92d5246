"""The scheduler's window executor on Spark: one long-lived session, the pipelines' windows.

``scheduler.executor.WindowExecutor`` names a sink table or a job without its pipeline; this
executor finds the pipeline that owns it. Two pipelines scheduled together must therefore not
share sink-table or job names, and they share one Spark session, so one catalog name.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from spark_jobs.window_jobs import JobOutcome, MergeOutcome, WindowJobs, plan_from_source
from tidemark.config.model import PipelineConfig
from tidemark.errors import ConfigError
from tidemark.windows import Window


class SparkWindowExecutor:
    def __init__(self, configs: Sequence[PipelineConfig], session: SparkSession) -> None:
        catalogs = {config.tidemark.catalog_name for config in configs}
        if len(catalogs) > 1:
            raise ConfigError(
                f"the pipelines use different catalog names ({', '.join(sorted(catalogs))}) and "
                "share one Spark session here: schedule them in separate processes"
            )
        self._mirrors: dict[str, WindowJobs] = {}
        self._jobs: dict[str, WindowJobs] = {}
        for config in configs:
            plan = plan_from_source(config)
            jobs = WindowJobs(config, plan, session)
            for sink in plan.sinks:
                if sink.mirror is not None:
                    _claim(self._mirrors, sink.name, jobs, "sink table")
            for job in config.tidemark.jobs:
                _claim(self._jobs, job.name, jobs, "job")

    def merge_mirror(
        self, sink_table: str, window: Window, up_to_order: int | None
    ) -> MergeOutcome:
        # the scheduler never runs two windows that touch one mirror at once (docs/scheduler.md)
        return self._mirrors[sink_table].merge_mirror(sink_table, window, up_to_order)

    def run_job(self, job_name: str, window: Window) -> JobOutcome:
        return self._jobs[job_name].run_job(job_name, window)


def _claim(owners: dict[str, WindowJobs], name: str, jobs: WindowJobs, kind: str) -> None:
    if name in owners:
        raise ConfigError(
            f"two of the scheduled pipelines have the {kind} {name}: schedule them in separate "
            "processes, or rename one"
        )
    owners[name] = jobs
