"""Users' SQL files: statements split where Spark would, variables substituted or refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from spark_jobs.user_sql import Statement, read_statements, split_statements, substitute
from tidemark.errors import ConfigError
from tidemark.windows import Window


def test_a_file_splits_at_semicolons_outside_literals_and_comments() -> None:
    text = (
        "-- a header; with a semicolon\n"
        "SELECT 'a;b', \"c;d\", `e;f` FROM t;\n"
        "/* block; comment\n   over lines */ INSERT INTO x\n"
        "VALUES ('it''s; fine', 'back\\'s;lash');\n"
        "\n"
        "SELECT 1 - 2 / 3 -- trailing; comment\n"
    )

    statements = split_statements(text)

    assert [s.text for s in statements] == [
        "SELECT 'a;b', \"c;d\", `e;f` FROM t",
        "INSERT INTO x\nVALUES ('it''s; fine', 'back\\'s;lash')",
        "SELECT 1 - 2 / 3",
    ]
    assert [s.line for s in statements] == [2, 4, 7]


def test_empty_statements_and_comment_only_files_give_nothing() -> None:
    assert split_statements(";;\n-- only a comment\n/* and another */;\n") == []


def test_window_and_job_variables_are_substituted_in_both_forms() -> None:
    window = Window.ending_at(datetime(2026, 3, 1, 14, 0, tzinfo=UTC), timedelta(hours=1))
    variables = {**window.variables("gmv"), "region": "eu"}
    statement = Statement(
        "INSERT OVERWRITE r PARTITION (dt = '${dt}', hour = '${hivevar:hour}') "
        "SELECT '${region}' FROM o WHERE ts >= TIMESTAMP '${window_start}' "
        "AND ts < TIMESTAMP '${hivevar:window_end}' AND ms < ${window_end_ms}",
        1,
    )

    assert substitute(statement, variables, Path("gmv.sql")) == (
        "INSERT OVERWRITE r PARTITION (dt = '2026-03-01', hour = '13') "
        "SELECT 'eu' FROM o WHERE ts >= TIMESTAMP '2026-03-01 13:00:00' "
        "AND ts < TIMESTAMP '2026-03-01 14:00:00' AND ms < 1772373600000"
    )


def test_an_unknown_variable_names_the_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "report.sql"
    file.write_text("SELECT 1;\n\nSELECT *\nFROM t\nWHERE dt = '${day}';\n")

    with pytest.raises(ConfigError, match=r"report\.sql:5: unknown variable \$\{day\}"):
        read_statements(file, {"dt": "2026-03-01"})


def test_a_variable_in_a_comment_is_not_substituted_nor_an_error(tmp_path: Path) -> None:
    file = tmp_path / "report.sql"
    file.write_text("-- uses ${nothing}\nSELECT '${dt}'")

    assert read_statements(file, {"dt": "2026-03-01"}) == ["SELECT '2026-03-01'"]


def test_a_window_has_the_day_and_hour_it_starts_in() -> None:
    window = Window.ending_at(datetime(2026, 3, 2, 0, 0, tzinfo=UTC), timedelta(minutes=5))

    assert window.variables("j")["dt"] == "2026-03-01"
    assert window.variables("j")["hour"] == "23"
