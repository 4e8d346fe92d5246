"""The command line turns errors into one line and an exit code; tracebacks only with -v."""

from __future__ import annotations

import pytest

from tidemark.app.cli import main


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
