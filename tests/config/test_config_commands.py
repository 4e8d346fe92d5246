"""``tidemark validate`` and ``export-flink-cdc`` as a user runs them: output and exit codes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.config.examples import EXAMPLES
from tidemark.app.cli import main

WriteFile = Callable[..., Path]

GOOD = """\
source:
  type: mysql
  hostname: db
  username: cdc
  password: pw
  tables: shop.orders
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
"""

BAD = """\
source:
  type: mysql
  hostname: db
  port: 33o6
  username: cdc
  password: pw
  tables: shop.orders
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
pipeline:
  nmae: orders
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_validate_a_good_file(write_file: WriteFile, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_file(GOOD)
    code, out, err = run(capsys, "validate", str(path))
    assert code == 0
    assert out == (
        f"{path}: valid (mysql cdc@db:3306, iceberg rest catalog, 1 table pattern, 0 routes, "
        "0 transforms, mirrors every 5 min, 0 jobs)\n"
    )
    assert err == ""


def test_validate_reports_every_problem_of_every_file_one_line_each(
    write_file: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = write_file(GOOD, "good.yaml"), write_file(BAD, "bad.yaml")
    missing = good.parent / "missing.yaml"
    code, out, err = run(capsys, "validate", str(bad), str(good), str(missing))
    assert code == 2
    assert out.startswith(f"{good}: valid")
    assert err.splitlines() == [
        f"tidemark validate: error: {bad}:4: source.port: must be a whole number, got: '33o6'",
        f"tidemark validate: error: {bad}:13: pipeline.nmae: unknown key in the pipeline block; "
        "did you mean 'name'?",
        f"tidemark validate: error: {missing}: no such file",
    ]
    assert "Traceback" not in err


def test_validate_prints_warnings_and_strict_makes_them_errors(
    write_file: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_file(GOOD + "pipeline:\n  operator.uid.prefix: shop\n")
    warning = (
        f"{path}:12: pipeline.operator.uid.prefix: has no effect in Tidemark: it is a setting "
        "of Flink's runtime"
    )
    code, out, err = run(capsys, "validate", str(path))
    assert (code, err) == (0, f"tidemark validate: warning: {warning}\n")
    code, out, err = run(capsys, "validate", "--strict", str(path))
    assert code == 2
    assert err.splitlines()[-1] == f"tidemark validate: error: {warning}"


def test_verbose_adds_the_traceback(
    write_file: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--verbose", "validate", str(write_file(BAD)))
    assert code == 2
    assert "Traceback" in err


def test_validate_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    examples = [str(p) for p in EXAMPLES]
    code, out, _ = run(capsys, "validate", *examples)
    assert code == 0
    assert len(out.splitlines()) == len(examples) >= 5


def test_export_flink_cdc(write_file: WriteFile, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_file(GOOD + "tidemark:\n  window: 10 min\n")
    code, out, err = run(capsys, "export-flink-cdc", str(path))
    assert (code, out, err) == (0, GOOD, "")


def test_export_refuses_an_invalid_file(
    write_file: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "export-flink-cdc", str(write_file(BAD)))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 2
