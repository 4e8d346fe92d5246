"""The status page over HTTP: built at most once per half refresh period whoever asks, its
tables read from the source every few minutes (the last ones kept while it cannot be read), a
pipeline that cannot be read shown with why while the others still show, nothing but the page
served and only to loopback names; ``tidemark ui`` serves the page of a pipeline that only
ingests, its freshness from its changelog's commits."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import cast

import pytest
import requests

from bench.polling import wait_until
from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import orders_pipeline
from tests.output.pages import NOW, pipeline_page
from tests.stack_helpers import free_ports
from tidemark.app.cli import main
from tidemark.app.page_server import REPLAN, PageServer, StatusPages, serve
from tidemark.app.pipeline import Pipeline, PipelinePage, StateLocation
from tidemark.config.plan import Plan
from tidemark.errors import TerminalError
from tidemark.source import current_position
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint


class _Pipeline:
    """A pipeline as the page sees it: a name, its plans as the source gives them at each
    read (or refuses), and what its state says at each read."""

    def __init__(
        self, name: str, *pages: PipelinePage | Exception, plans: list[object] | None = None
    ) -> None:
        self.name = name
        self._pages = list(pages)
        self._plans = plans or ["plan"]
        #: the plan each page was read with
        self.read_with: list[object] = []

    def current_plan(self) -> object:
        found = self._plans.pop(0) if len(self._plans) > 1 else self._plans[0]
        if isinstance(found, Exception):
            raise found
        return found

    def page(
        self, now: datetime, since: datetime, plan: Plan, location: StateLocation | None
    ) -> PipelinePage:
        self.read_with.append(plan)
        found = self._pages.pop(0) if len(self._pages) > 1 else self._pages[0]
        if isinstance(found, Exception):
            raise found
        return found


class _Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def _pages(clock: _Clock, *pipelines: _Pipeline) -> StatusPages:
    return StatusPages(cast(list[Pipeline], list(pipelines)), clock, refresh_seconds=30)


def test_the_page_is_built_again_only_after_half_its_refresh_period() -> None:
    clock = _Clock()
    shop = _Pipeline("shop", pipeline_page(), pipeline_page(errors=[]))
    pages = _pages(clock, shop)

    first = pages.html()
    clock.now += timedelta(seconds=14)
    assert pages.html() == first
    clock.now += timedelta(seconds=1)
    assert "none in the last" in pages.html() and "none in the last" not in first


def test_a_pipeline_that_cannot_be_read_is_shown_with_why_and_the_others_still_are() -> None:
    down = _Pipeline("billing", TerminalError("the catalog at 127.0.0.1:1 refused the login"))
    broken = _Pipeline("audit", ValueError("unexpected"))

    html = _pages(_Clock(), down, broken, _Pipeline("shop", pipeline_page())).html()

    assert "Cannot read this pipeline's state: the catalog at 127.0.0.1:1 refused" in html
    # another error's text is for the log: it may say anything
    assert "Cannot read this pipeline's state: ValueError (see the log)" in html
    assert "unexpected" not in html
    assert 'data-table="shop.orders"' in html


def test_a_pipeline_whose_lake_is_down_shows_since_when_and_the_log_says_it_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    refused = requests.ConnectionError("refused")
    shop = _Pipeline("shop", refused, refused, refused, pipeline_page())
    pages = _pages(clock, shop)

    with caplog.at_level(logging.INFO, "tidemark.app.page_server"):
        for _ in range(3):  # three builds while the REST catalog is down
            html = pages.html()
            clock.now += timedelta(seconds=15)
        assert (
            "waiting for the catalog since 2026-11-27 12:00:00 UTC: the REST catalog refused "
            "the connection or did not answer"
        ) in html.replace("\n", " ")
        assert 'data-table="shop.orders"' in pages.html()  # back
    said = [record.getMessage() for record in caplog.records]
    assert said == [
        "The catalog is unavailable (the REST catalog refused the connection or did not "
        "answer): the status page shows what it can meanwhile",
        "The catalog is back after 45 s",
    ]


def test_the_tables_are_read_from_the_source_every_few_minutes_and_kept_while_it_is_down() -> None:
    clock = _Clock()
    shop = _Pipeline(
        "shop", pipeline_page(), plans=["first", ConnectionError("source down"), "second"]
    )
    pages = _pages(clock, shop)

    for elapsed in (timedelta(0), REPLAN / 2, REPLAN, REPLAN * 2):
        clock.now = NOW + elapsed
        pages.html()

    assert shop.read_with == ["first", "first", "first", "second"]


@pytest.fixture
def server() -> Iterator[PageServer]:
    served = serve(_pages(_Clock(), _Pipeline("shop", pipeline_page())), port=0)
    yield served
    served.close()


def test_the_page_is_served_at_the_root_as_html_never_cached(server: PageServer) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/", timeout=10) as response:
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert 'data-pipeline="shop"' in response.read().decode()


def test_another_site_s_name_for_loopback_is_refused(server: PageServer) -> None:
    asked = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/", headers={"Host": f"evil.example:{server.port}"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(asked, timeout=10)
    assert refused.value.code == 421


def test_any_other_path_is_not_found(server: PageServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10)
    assert refused.value.code == 404


@pytest.mark.every_storage
def test_tidemark_ui_shows_a_pipeline_without_reports_fresh_from_its_commits(
    source: SourceEndpoint,
    lake: LakeEndpoint,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{source_database}`.orders (id INT PRIMARY KEY, v INT)")
        cursor.execute(f"INSERT INTO `{source_database}`.orders VALUES (1, 1), (2, 2)")
    path = orders_pipeline(
        tmp_path,
        source,
        lake,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
    )
    pipeline = Pipeline.open(path)
    connection = pipeline.config.source.connection
    pipeline.ingest(StopWhen(until_position=current_position(connection)))  # the bootstrap
    with source.admin_source().connect() as admin, admin.cursor() as cursor:
        cursor.execute(f"INSERT INTO `{source_database}`.orders VALUES (3, 3)")
    pipeline.ingest(StopWhen(until_position=current_position(connection)))  # a watermark
    (port,) = free_ports(1)
    command = [sys.executable, "-m", "tidemark.app.cli", "ui", str(path), "--port", str(port)]
    ui = subprocess.Popen(
        [*command, "--max-seconds", "120"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stderr=subprocess.PIPE,
    )
    try:
        html = wait_until("the page served", lambda: _fetch(f"http://127.0.0.1:{port}/"), 60)
    finally:
        ui.terminate()
        _, errors = ui.communicate(timeout=60)

    assert f'data-table="{namespace}.orders"' in html
    # the newest commit's sample, then the present
    [points] = re.findall(r'<polyline points="([^"]*)"', html)
    assert len(points.split()) >= 2
    assert "This pipeline publishes no commit reports, so it has no windows." in html
    assert ui.returncode == 0, errors.decode()


def _fetch(url: str) -> str:
    """The page, or nothing while the server is not listening yet."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(response.read().decode())
    except urllib.error.URLError:
        return ""


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--ui-refresh", "2"], "must be 5 seconds or more"),
        (["--ui-hours", "30"], "at most 24 hours"),
        (["--ui-hours", "0"], "more than 0"),
    ],
)
def test_a_page_that_would_reload_too_often_or_outlast_its_samples_is_refused(
    option: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["ui", "pipeline.yaml", *option])

    assert refused.value.code == 2
    assert said in capsys.readouterr().err
