"""What one pipeline schedules: its tables and its tasks, built once from the checked config."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from scheduler.gate import TaskSpec, job_task, mirror_task
from tidemark.config.declaration import default_of
from tidemark.config.model import JobConfig, PaimonSink, PipelineConfig
from tidemark.config.plan import SinkTable
from tidemark.errors import ConfigError

#: the retry policy of mirror merges, which have no job block to say otherwise: a job's default
MIRROR_RETRIES: int = default_of(JobConfig, "retries")
MIRROR_RETRY_DELAY: timedelta = default_of(JobConfig, "retry_delay")


@dataclass(frozen=True)
class PipelineSchedule:
    """The tasks of one pipeline and the changelog table behind each sink table."""

    #: the pipeline's id in the state store and in the consumer group's name
    pipeline: str
    #: sink table -> changelog table (commit reports name the changelog)
    changelogs: Mapping[str, str]
    tasks: tuple[TaskSpec, ...]
    #: each sink table's tables are maintained this often, between its windows; None: never
    maintenance_interval: timedelta | None = None

    @property
    def sink_of(self) -> dict[str, str]:
        """changelog table -> sink table."""
        return {changelog: sink for sink, changelog in self.changelogs.items()}

    def extended_by(self, newer: PipelineSchedule) -> PipelineSchedule:
        """This schedule and the sink tables and tasks ``newer`` (a plan made while running)
        adds: tables only join a running schedule; one dropped since keeps its tasks."""
        known = {spec.task for spec in self.tasks}
        added = tuple(spec for spec in newer.tasks if spec.task not in known)
        extended = replace(
            self,
            changelogs={**newer.changelogs, **self.changelogs},
            tasks=(*self.tasks, *added),
        )
        extended._check()
        return extended

    @classmethod
    def build(
        cls,
        pipeline: str,
        sinks: Sequence[SinkTable],
        jobs: Iterable[TaskSpec] = (),
        *,
        mirror_retries: int = MIRROR_RETRIES,
        mirror_retry_delay: timedelta = MIRROR_RETRY_DELAY,
        maintenance_interval: timedelta | None = None,
    ) -> PipelineSchedule:
        mirrors = [
            TaskSpec(
                mirror_task(sink.name),
                (sink.name,),
                sink.mirror_window,
                mirror_retries,
                mirror_retry_delay,
            )
            for sink in sinks
            if sink.mirror is not None
        ]
        schedule = cls(
            pipeline,
            {sink.name: sink.changelog for sink in sinks},
            (*mirrors, *jobs),
            maintenance_interval,
        )
        schedule._check()
        return schedule

    @classmethod
    def from_config(cls, config: PipelineConfig, sinks: Sequence[SinkTable]) -> PipelineSchedule:
        """Mirrors of the planned sink tables, and the file's jobs, with their retry policy.

        A Paimon pipeline has no mirrors (each sink table is its own), its jobs read their
        inputs at pinned snapshots, and its tables are maintained by Paimon's own pass
        (``spark_jobs.paimon_maintenance``), which keeps the snapshots those jobs may read."""
        paimon = isinstance(config.sink, PaimonSink)
        jobs = [
            TaskSpec(
                job_task(job.name),
                job.inputs,
                job.window,
                job.retries,
                job.retry_delay,
                coalesce=job.coalesce,
                rerun_late_windows=job.rerun_late_windows,
                pins_snapshots=paimon,
            )
            for job in config.tidemark.jobs
        ]
        maintenance = config.tidemark.maintenance
        return cls.build(
            config.pipeline.name,
            sinks,
            jobs,
            maintenance_interval=maintenance.interval if maintenance.enabled else None,
        )

    def _check(self) -> None:
        windows = {s.task.name: s.window for s in self.tasks if s.task.kind == "mirror"}
        for spec in self.tasks:
            for table in spec.inputs:
                if table not in self.changelogs:
                    raise ConfigError(
                        f"{spec.task} reads {table}, which this pipeline does not produce; "
                        "check the job's inputs against `tidemark plan`"
                    )
                mirror_window = windows.get(table)
                if mirror_window is not None and spec.window % mirror_window:
                    raise ConfigError(
                        f"{spec.task} has a {spec.window} window, not a multiple of the mirror "
                        f"window of its input {table} ({mirror_window})"
                    )
