"""An option is declared once, on the model field that holds its value: its key, type, default,
meaning and check. Reading a block, its allowed keys, its required keys and the defaults other
settings start from all follow from that one declaration."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel, ConfigDict

from ingest.settings import IngestSettings
from scheduler.gate import TaskSpec, job_task
from scheduler.spec import MIRROR_RETRIES, MIRROR_RETRY_DELAY
from tidemark.config.blocks import read_block, read_options
from tidemark.config.declaration import declared, default_of, keys_of, option
from tidemark.config.errors import Problems
from tidemark.config.fields import Reader
from tidemark.config.loader import MapNode, parse
from tidemark.config.model import IngestOptions, JobConfig
from tidemark.config.values import at_least_one, parse_bool, parse_window, text


class Lights(BaseModel):
    """A block of two options, declared the way every block of the file is."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="light options")

    enabled: bool = option(True, parse=parse_bool, doc="false: lights off")
    blink_every: timedelta = option(timedelta(minutes=5), parse=parse_window, doc="how often")


class Lamp(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", title="a lamp")

    label: str = option(parse=text, doc="what it says on it")
    max_watts: int = option(60, key="max.watts", parse=at_least_one, doc="at most this bright")
    lights: Lights = option(Lights(), shorthand="enabled", doc="its lights, or false")


def read(yaml: str) -> tuple[Lamp | None, list[str]]:
    problems = Problems("lamp.yaml")
    root = parse(yaml, problems, {})
    assert isinstance(root, MapNode)
    lamp = read_block(Reader(problems), root, "lamp", Lamp)
    return lamp, [str(p) for p in problems.items]


def test_keys_are_field_names_with_dashes_unless_the_declaration_spells_them() -> None:
    assert keys_of(Lamp) == ("label", "max.watts", "lights")
    assert keys_of(Lights) == ("enabled", "blink-every")


def test_what_the_file_leaves_out_takes_the_declared_default() -> None:
    lamp, problems = read("label: desk\n")
    assert problems == []
    assert lamp == Lamp(label="desk", max_watts=60, lights=Lights())


def test_a_nested_block_and_its_one_value_shorthand_are_read_from_their_declarations() -> None:
    nested, _ = read("label: desk\nlights: {blink-every: 1 h}\n")
    off, _ = read("label: desk\nlights: false\n")
    assert nested is not None and nested.lights == Lights(blink_every=timedelta(hours=1))
    assert off is not None and off.lights == Lights(enabled=False)


def test_every_problem_of_a_block_at_once_with_its_line_and_key() -> None:
    lamp, problems = read("max.watts: 0\nlights:\n  blink-evry: 1 h\n  enabled: yes\n")
    assert lamp is None
    assert problems == [
        "lamp.yaml:1: lamp: a lamp is missing the required key 'label'",
        "lamp.yaml:1: lamp.max.watts: must be at least 1, got: '0'",
        "lamp.yaml:3: lamp.lights.blink-evry: unknown key in light options; did you mean "
        "'blink-every'?",
        "lamp.yaml:4: lamp.lights.enabled: must be true or false, got: 'yes'; Flink CDC reads "
        "only true and false, not YAML 1.1's yes/no/on/off",
    ]


def test_options_that_read_well_are_kept_for_the_checks_that_can_go_on() -> None:
    problems = Problems("lamp.yaml")
    root = parse("label: desk\nmax.watts: lots\n", problems, {})
    assert isinstance(root, MapNode)
    values, failed = read_options(Reader(problems), root, "lamp", Lamp)
    assert (values, failed) == ({"label": "desk"}, frozenset({"max_watts"}))


def test_an_option_nothing_can_read_is_a_mistake_of_ours_found_at_once() -> None:
    class Broken(BaseModel):
        model_config = ConfigDict(title="broken options")
        paths: tuple[str, ...] = option((), doc="declares neither parse nor read")

    problems = Problems("broken.yaml")
    root = parse("paths: [a]\n", problems, {})
    assert isinstance(root, MapNode)
    with pytest.raises(TypeError, match="'paths' is no block and declares neither parse nor read"):
        read_block(Reader(problems), root, "broken", Broken)


def test_every_option_of_the_tidemark_block_says_what_it_does() -> None:
    undocumented = [
        f"{model.__name__}.{item.attribute}"
        for model in (IngestOptions, JobConfig)
        for item in declared(model)
        if not item.option.doc
    ]
    assert undocumented == []


def test_ingest_settings_start_from_the_declared_defaults() -> None:
    assert IngestSettings() == IngestSettings.from_options(IngestOptions())


def test_a_task_without_a_retry_policy_of_its_own_gets_a_jobs_default() -> None:
    policy = ("retries", "retry_delay", "coalesce", "rerun_late_windows")
    task = TaskSpec(job_task("report"), ("shop.orders",), timedelta(minutes=5))
    jobs_default = {name: default_of(JobConfig, name) for name in policy}
    assert {name: getattr(task, name) for name in policy} == jobs_default
    assert (MIRROR_RETRIES, MIRROR_RETRY_DELAY) == (
        jobs_default["retries"],
        jobs_default["retry_delay"],
    )


@pytest.mark.parametrize(
    ("catalog_type", "option", "threads"),
    [("jdbc", None, 4), ("rest", None, 16), ("REST", None, 16), ("rest", 2, 2), ("hive", None, 4)],
)
def test_commit_threads_follow_the_catalog_unless_the_file_says(
    catalog_type: str, option: int | None, threads: int
) -> None:
    """A REST catalog's commit waits several times as long for its server and the store."""
    options = IngestOptions(commit_threads=option)

    assert IngestSettings.from_options(options, catalog_type).commit_threads == threads
