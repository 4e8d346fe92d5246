"""``${VAR}`` substitution, and secrets never leaving the config: not in errors, warnings, reprs,
validate or export output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tidemark.app.cli import main
from tidemark.config import PipelineConfigError, load_pipeline, reveal
from tidemark.config.secrets import Redactor, is_secret_key, is_secret_variable
from tidemark.config.variables import substitute

WriteFile = Callable[..., Path]

SECRET = "Sup3r-S3cret-Pa55"
TOKEN = "t0k3n-Xy9-Qq7"


@pytest.mark.parametrize(
    ("text", "env", "value"),
    [
        ("${HOST}", {"HOST": "db"}, "db"),
        ("${HOST:-localhost}", {}, "localhost"),
        ("${HOST:-localhost}", {"HOST": ""}, "localhost"),  # empty counts as unset, as in sh
        ("${HOST}", {"HOST": ""}, ""),
        ("jdbc:mysql://${HOST}:${PORT:-3306}/db", {"HOST": "h"}, "jdbc:mysql://h:3306/db"),
        ("${URI:-jdbc:postgresql://pg:5432/c}", {}, "jdbc:postgresql://pg:5432/c"),
        ("$${HOST} costs $5", {"HOST": "db"}, "${HOST} costs $5"),
        ("no references", {}, "no references"),
    ],
)
def test_substitution(text: str, env: dict[str, str], value: str) -> None:
    result = substitute(text, env)
    assert (result.value, result.errors) == (value, ())


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("catalog.properties.jdbc.password", True),
        ("catalog.properties.token", True),
        ("catalog.properties.credential", True),
        ("catalog.properties.s3.secret-access-key", True),
        ("debezium.database.pwd", True),
        ("spark.hadoop.fs.s3a.secret.key", True),
        ("catalog.properties.s3.access-key-id", False),
        ("hostname", False),
        ("username", False),
    ],
)
def test_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_secret_variables() -> None:
    assert is_secret_variable("MYSQL_PASSWORD") and is_secret_variable("API_TOKEN")
    assert not is_secret_variable("MYSQL_HOST")


def test_redactor_masks_known_secrets_and_url_passwords() -> None:
    redactor = Redactor()
    redactor.add([SECRET, "ab"])  # too short to be searched for
    text = f"got {SECRET} at jdbc:postgresql://u:pw@h/db?password=x&user=ab"
    assert redactor.redact(text) == "got *** at jdbc:postgresql://u:***@h/db?password=***&user=ab"


# A file full of mistakes, every one next to a secret.
LEAKY = f"""
source:
  type: mysql
  hostname: db
  username: cdc
  password: {SECRET}
  tables: shop.orders
  server-time-zone: ${{MYSQL_PASSWORD}}
  port: ${{API_TOKEN}}
  passwrd: {SECRET}
  jdbc.properties.password: {SECRET}
sink:
  type: iceberg
  catalog.properties.type: jdbc
  catalog.properties.uri: postgresql://tidemark:{SECRET}@pg/catalog?token={TOKEN}
  catalog.properties.token: [{TOKEN}]
tidemark:
  jobs:
    report:
      inputs: [shop.orders]
      sql: missing.sql
      variables:
        api_token: {TOKEN}
      spark:
        hadoop.secret: {SECRET}
"""


def test_errors_never_show_secrets(write_file: WriteFile) -> None:
    path = write_file(LEAKY)
    env = {"MYSQL_PASSWORD": SECRET, "API_TOKEN": TOKEN}
    with pytest.raises(PipelineConfigError) as caught:
        load_pipeline(path, env)

    message = str(caught.value)
    assert SECRET not in message and TOKEN not in message
    # the problems are still all there, and say what is wrong without the value
    assert "source.server-time-zone: must be a time zone id" in message
    assert "got: (a secret, not shown)" in message
    assert "source.passwrd: unknown key in a mysql source; did you mean 'password'?" in message
    assert "postgresql://tidemark:***@pg/catalog?token=***" in message
    assert len(caught.value.problems) >= 6


@pytest.mark.parametrize(
    "line",
    [f"password: ${{DB:{SECRET}}}", f"hostname: ${{DB_PASSWORD:{SECRET}}}"],
    ids=["secret key", "secret variable"],
)
def test_a_malformed_reference_is_not_quoted_past_its_name(
    write_file: WriteFile, line: str
) -> None:
    with pytest.raises(PipelineConfigError) as caught:
        load_pipeline(write_file(f"source:\n  {line}\n"), {})
    assert SECRET not in str(caught.value)
    assert "...}' is not a variable reference" in str(caught.value)


def test_a_secret_on_a_line_with_a_yaml_error_is_not_shown(write_file: WriteFile) -> None:
    path = write_file(f'source:\n  password: "{SECRET}\n')
    with pytest.raises(PipelineConfigError) as caught:
        load_pipeline(path, {})
    assert SECRET not in str(caught.value)


VALID = """
source:
  type: mysql
  hostname: db
  username: cdc
  password: ${MYSQL_PASSWORD}
  tables: shop.orders
  jdbc.properties.password: ${MYSQL_PASSWORD}
sink:
  type: iceberg
  catalog.properties.type: jdbc
  catalog.properties.uri: jdbc:postgresql://pg:5432/catalog
  catalog.properties.jdbc.user: tidemark
  catalog.properties.jdbc.password: ${CATALOG_PASSWORD:-fallback-pw-123}
tidemark:
  jobs:
    report:
      inputs: [shop.orders]
      sql: report.sql
      variables: {api_token: "${API_TOKEN}", region: eu}
"""


def test_secrets_are_secretstr_and_masked_in_reprs(write_file: WriteFile) -> None:
    write_file("SELECT 1", "report.sql")
    env = {"MYSQL_PASSWORD": SECRET, "API_TOKEN": TOKEN}
    config = load_pipeline(write_file(VALID), env)

    assert config.source.password.get_secret_value() == SECRET
    assert reveal(config.sink.catalog_properties)["jdbc.password"] == "fallback-pw-123"
    assert reveal(config.tidemark.jobs[0].variables) == {"api_token": TOKEN, "region": "eu"}
    for shown in (repr(config), str(config), config.model_dump_json(), str(config.warnings)):
        assert SECRET not in shown and TOKEN not in shown and "fallback-pw-123" not in shown


def test_validate_and_export_output_carry_no_secret(
    write_file: WriteFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_file("SELECT 1", "report.sql")
    path = write_file(VALID)
    monkeypatch.setenv("MYSQL_PASSWORD", SECRET)
    monkeypatch.setenv("API_TOKEN", TOKEN)
    monkeypatch.setenv("CATALOG_PASSWORD", "catalog-Secret-42")

    outputs = []
    for argv in (
        ["validate", str(path)],
        ["export-flink-cdc", str(path)],
        ["export-flink-cdc", "--resolve", str(path)],
    ):
        assert main(argv) == 0
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)

    for output in outputs:
        assert SECRET not in output and TOKEN not in output and "catalog-Secret-42" not in output
    # secrets stay as the references the user wrote
    assert "password: ${MYSQL_PASSWORD}" in outputs[2]
    assert "catalog.properties.jdbc.password: ${CATALOG_PASSWORD:-fallback-pw-123}" in outputs[2]
