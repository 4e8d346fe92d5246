"""The command line turns errors into one line and an exit code; tracebacks only with -v, or
for an unexpected error."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from tidemark.app.cli import main
from tidemark.app.commands import validate
from tidemark.app.exit_codes import ExitCode
from tidemark.errors import ConfigError, TerminalError, TransientError


def test_a_configuration_error_is_one_line_and_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIDEMARK_KAFKA_PORT", "kafka")

    assert main(["stack", "status"]) == 2

    assert capsys.readouterr().err == (
        "tidemark stack: error: TIDEMARK_KAFKA_PORT must be a port number from 1 to 65535, "
        "got: 'kafka'\n"
    )


def test_verbose_adds_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIDEMARK_KAFKA_PORT", "0")

    assert main(["--verbose", "stack", "status"]) == 2

    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith("got: '0'\n")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (TerminalError("the account was refused"), ExitCode.FAILURE),
        (ConfigError("source.port must be a port number"), ExitCode.CONFIG),
        (TransientError("cannot connect to MySQL"), ExitCode.TRANSIENT),
    ],
)
def test_the_exit_code_says_whether_the_same_command_may_work_later(
    error: Exception,
    code: ExitCode,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(validate, "_validate", _raising(error))

    assert main(["validate", "pipeline.yaml"]) == code

    assert capsys.readouterr().err == f"tidemark validate: error: {error}\n"


def test_an_unexpected_error_shows_its_traceback_and_exits_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(validate, "_validate", _raising(KeyError("orders")))

    assert main(["validate", "pipeline.yaml"]) == ExitCode.CRASH

    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith("tidemark validate: unexpected error: 'orders'\n")


def _raising(error: Exception) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        raise error

    return handler
