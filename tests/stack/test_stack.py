"""`tidemark stack`: seven real services, idempotent start, and it only ever stops its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pyspark
import pytest

from tests.stack_helpers import free_port_block, free_ports
from tidemark.app.cli import main
from tidemark.errors import ConfigError, TerminalError
from tidemark.stack.mysql import MySQLSystem
from tidemark.stack.process import (
    LOG_ROTATE_BYTES,
    START_LINE,
    owned_pid,
    port_is_open,
    spawn_daemon,
    wait_for,
)
from tidemark.stack.service import ServiceFailedError
from tidemark.stack.settings import (
    OBJECT_STORE_HTTP_PORTS,
    PAIMON_VERSION,
    SEAWEEDFS_GRPC_OFFSET,
    ObjectStorePorts,
    StackSettings,
)
from tidemark.stack.stack import Stack


def test_status_reports_seven_healthy_services_as_json(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stack", "status", "--json"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["version"] == 1
    assert report["healthy"] is True
    assert {name: s["healthy"] for name, s in report["services"].items()} == {
        "mariadb": True,
        "mysql": True,
        "postgres": True,
        "object_store": True,
        "rest_catalog": True,
        "kafka": True,
        "spark": True,
    }
    assert report["services"]["kafka"]["bootstrap_servers"].startswith("127.0.0.1:")


def test_sparks_jars_add_paimon_bundle_and_no_second_copy_of_sparks_own(stack: Stack) -> None:
    spark_own = Path(pyspark.__file__).parent / "jars"

    added = {jar.name for jar in stack.spark.jars()}

    assert f"paimon-bundle-{PAIMON_VERSION}.jar" in added
    assert not {_artifact(name) for name in added} & {
        _artifact(jar.name) for jar in spark_own.glob("*.jar")
    }


def _artifact(jar: str) -> str:
    """``lz4-java-1.8.0.jar``: ``lz4-java``."""
    return jar.rsplit("-", 1)[0]


def test_up_leaves_running_services_alone(stack: Stack) -> None:
    before = {daemon.name: daemon.running_pid() for daemon in stack.daemons}

    stack.up()

    assert {daemon.name: daemon.running_pid() for daemon in stack.daemons} == before
    assert None not in before.values()


def test_a_pid_file_naming_a_stranger_is_not_ours(tmp_path: Path) -> None:
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        pid_file = tmp_path / "kafka.pid"
        pid_file.write_text(f"{stranger.pid}\n")

        # the kernel shows the new command line a moment after exec
        assert wait_for(lambda: owned_pid(pid_file, marker="sleep 60") == stranger.pid, timeout=5)
        assert owned_pid(pid_file, marker=str(tmp_path)) is None
    finally:
        stranger.kill()
        stranger.wait()


def test_a_pid_reused_by_another_of_the_stacks_processes_is_not_ours(tmp_path: Path) -> None:
    """After a crash, the pid in a service's pid file often names another daemon of the same
    stack (same home folder in its command line): only the start time tells them apart."""
    log, pid_file = tmp_path / "sleeper.log", tmp_path / "sleeper.pid"
    sleeper = spawn_daemon(["sleep", "60"], log=log, pid_file=pid_file, cwd=tmp_path)
    try:
        assert wait_for(lambda: owned_pid(pid_file, marker="sleep 60") == sleeper.pid, timeout=5)
        pid, started = pid_file.read_text().splitlines()

        pid_file.write_text(f"{pid}\n{int(started) - 1}\n")

        assert owned_pid(pid_file, marker="sleep 60") is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_log_grown_too_large_is_moved_aside_when_its_daemon_starts(tmp_path: Path) -> None:
    log, pid_file = tmp_path / "kafka.log", tmp_path / "kafka.pid"
    with log.open("wb") as grown:  # sparse: large without the disk it names
        grown.write(b"what an earlier run wrote\n")
        grown.truncate(LOG_ROTATE_BYTES + 1)

    spawn_daemon(["true"], log=log, pid_file=pid_file, cwd=tmp_path).wait()

    assert (tmp_path / "kafka.log.1").read_bytes().startswith(b"what an earlier run wrote")
    assert log.read_text().startswith(START_LINE)


def test_a_port_override_that_is_not_a_port_is_refused() -> None:
    with pytest.raises(ConfigError, match="TIDEMARK_KAFKA_PORT must be a port number"):
        StackSettings.from_env({"TIDEMARK_HOME": "/tmp/x", "TIDEMARK_KAFKA_PORT": "90000"})


def test_a_second_stack_starts_from_nothing_and_stops_without_touching_the_first(
    stack: Stack, second_home: Path, server_id: int
) -> None:
    second, ports = stack_on_free_ports(second_home)

    second.up()
    assert second.status()["healthy"] is True
    endpoints = second.endpoints()
    for source in (endpoints.mariadb, endpoints.mysql):
        with source.cdc_source(server_id).connect() as conn, conn.cursor() as cursor:
            cursor.execute("SELECT @@binlog_format, @@binlog_row_image, @@binlog_row_metadata")
            assert cursor.fetchone() == ("ROW", "FULL", "FULL")

    assert second.down() == [
        "kafka",
        "rest_catalog",
        "object_store",
        "postgres",
        "mysql",
        "mariadb",
    ]
    assert not any(port_is_open("127.0.0.1", port) for port in ports)
    assert stack.status()["healthy"] is True


def test_a_stack_killed_with_sigkill_comes_back_on_up(second_home: Path) -> None:
    stack, ports = stack_on_free_ports(second_home)
    stack.up()
    for daemon in stack.daemons:
        pid = daemon.running_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    # After a reboot the crashed server's lock file may name a pid another process now has.
    stranger = subprocess.Popen(["sleep", "60"])
    lock = second_home / "postgres" / "data" / "postmaster.pid"
    lock.write_text(f"{stranger.pid}\n" + lock.read_text().split("\n", 1)[1])
    try:
        assert wait_for(lambda: not any(port_is_open("127.0.0.1", p) for p in ports), timeout=30)

        stack.up()

        assert stack.status()["healthy"] is True
    finally:
        stranger.kill()
        stranger.wait()


def test_a_port_taken_by_a_stranger_is_named_with_the_fix(second_home: Path) -> None:
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        taken = stranger.getsockname()[1]
        stack = Stack(StackSettings(home=second_home, mariadb_port=taken))

        with pytest.raises(ServiceFailedError) as failure:
            stack.daemons[0].up()

    assert str(failure.value).startswith(
        f"mariadb: port {taken} on 127.0.0.1 is taken by a process the stack did not start; "
        "stop it or choose another port with TIDEMARK_MARIADB_PORT"
    )


def test_a_service_that_dies_while_starting_is_named_with_its_log(second_home: Path) -> None:
    stack, _ = stack_on_free_ports(second_home, kafka_heap="lots")
    (kafka,) = (daemon for daemon in stack.daemons if daemon.name == "kafka")
    kafka.log.parent.mkdir(parents=True, exist_ok=True)
    kafka.log.write_text("a line an earlier run of kafka wrote\n")

    with pytest.raises(ServiceFailedError) as failure:
        kafka.up()

    message = str(failure.value)
    assert message.startswith("kafka: exited while starting\n--- last lines of ")
    assert "Invalid maximum heap size: -Xmxlots" in message
    assert "an earlier run" not in message
    # a CI page shows the end of the output: the problem is there too
    assert message.endswith("\nkafka: exited while starting")


def test_a_mysql_system_that_cannot_be_built_is_refused_with_the_fix(tmp_path: Path) -> None:
    unreachable = "http://127.0.0.1:9/debian"  # the discard port: nothing answers
    system = MySQLSystem(StackSettings(home=tmp_path, debian_mirror=unreachable))

    with pytest.raises(TerminalError) as refusal:
        system.ensure_built()

    message = str(refusal.value)
    assert message.startswith("building the MySQL server's Debian sid system with debootstrap")
    assert message.endswith(
        f"the stack's MySQL server could not be built: check that {unreachable} is reachable "
        "from this machine, or name a Debian mirror that is with TIDEMARK_DEBIAN_MIRROR, then "
        "run 'tidemark stack up' again"
    )
    assert not system.mysqld.exists()


def stack_on_free_ports(home: Path, **settings: Any) -> tuple[Stack, list[int]]:
    """A stack in ``home`` whose services listen on ports nothing else uses."""
    names = (
        "mariadb_port",
        "mysql_port",
        "postgres_port",
        "rest_catalog_port",
        "kafka_port",
        "kafka_controller_port",
    )
    ports = free_ports(len(names))
    object_store = free_port_block(OBJECT_STORE_HTTP_PORTS, SEAWEEDFS_GRPC_OFFSET)
    fields: dict[str, Any] = {
        **dict(zip(names, ports, strict=True)),
        "object_store_port": object_store,
        **settings,
    }
    stack = Stack(StackSettings(home=home, **fields))
    return stack, [*ports, *ObjectStorePorts.from_s3_port(object_store).all()]
