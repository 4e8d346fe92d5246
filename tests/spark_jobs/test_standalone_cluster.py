"""A window job submitted with spark-submit to a Spark standalone master and worker on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspark
import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from bench.polling import wait_until
from tests.spark_jobs.sources import (
    changelog_watermark,
    create_shards,
    execute,
    ingest_to_end,
    orders_pipeline,
    source_rows,
    tick_past_now,
)
from tests.stack_helpers import free_ports
from tidemark.stack.endpoints import StackEndpoints
from tidemark.windows import Window

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPOSITORY = Path(__file__).resolve().parents[2]
START_SECONDS = 90.0


def _until(what: str, check: Any, seconds: float = START_SECONDS) -> Any:
    return wait_until(what, check, seconds, interval=0.25)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _master_state(ui_port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            state: dict[str, Any] = json.load(response)
            return state
    except OSError:
        return {}


def _spark_env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPOSITORY),
    }


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture
def standalone_cluster(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """(master URL, master web UI port) of a master and one 1-core worker, stopped afterwards."""
    master_port, master_ui, worker_port, worker_ui = free_ports(4)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with open(tmp_path / "master.log", "wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(master_port), "--webui-port", str(master_ui)],
                    stdout=log, stderr=subprocess.STDOUT, env=_spark_env(),
                )
            )  # fmt: skip
        _until("the master listens", lambda: _listening(master_port))
        url = f"spark://127.0.0.1:{master_port}"
        with open(tmp_path / "worker.log", "wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                     "--port", str(worker_port), "--webui-port", str(worker_ui),
                     "--cores", "1", "--memory", "1g", url],
                    stdout=log, stderr=subprocess.STDOUT, env=_spark_env(),
                )
            )  # fmt: skip
        _until("a worker registers", lambda: _master_state(master_ui).get("aliveworkers") == 1)
        yield url, master_ui
    finally:
        for process in reversed(processes):
            _stop(process)


def test_a_mirror_window_runs_on_a_standalone_cluster_through_spark_submit(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    spark: SparkSession,
    standalone_cluster: tuple[str, int],
    tmp_path: Path,
    server_id: int,
) -> None:
    master, master_ui = standalone_cluster
    create_shards(admin_connection, 2)
    config = orders_pipeline(
        tmp_path / "p.yaml",
        endpoints,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
    )
    ingest_to_end(config, catalog, endpoints, server_id)
    execute(
        admin_connection,
        "INSERT INTO orders_0 VALUES (1, 101, 'new', 1.00, NOW()), (2, 102, 'new', 2.00, NOW())",
        "INSERT INTO orders_1 VALUES (1, 103, 'new', 3.00, NOW())",
        "UPDATE orders_1 SET status = 'paid' WHERE order_no = 103",
        "DELETE FROM orders_0 WHERE order_no = 101",
    )
    tick_past_now(admin_connection)
    ingest_to_end(config, catalog, endpoints, server_id)
    window = Window.ending_at(
        changelog_watermark(catalog, f"{namespace}.orders_changelog"), timedelta(minutes=5)
    )

    submitted = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
         "--jars", ",".join(str(jar) for jar in endpoints.spark.jars),
         "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false",
         str(REPOSITORY / "spark_jobs" / "run_window.py"), str(config.path),
         "--task", f"mirror:{namespace}.orders",
         "--start", str(window.start_ms), "--end", str(window.end_ms)],
        capture_output=True, env=_spark_env(), timeout=300, check=False,
    )  # fmt: skip

    assert submitted.returncode == 0, submitted.stderr.decode()[-3000:]
    # Spark's own console lines may follow on stdout: the outcome is the JSON line
    lines = submitted.stdout.decode().splitlines()
    outcome = json.loads(next(line for line in lines if line.startswith('{"version"')))
    assert (outcome["kind"], outcome["skipped"], outcome["changes"]) == ("MergeOutcome", False, 5)
    applications = _master_state(master_ui).get("completedapps", [])
    assert [app["name"] for app in applications] == [f"tidemark mirror:{namespace}.orders {window}"]
    mirror = spark.sql(
        f"SELECT order_no, status, amount FROM tidemark.{namespace}.orders ORDER BY order_no"
    ).collect()
    assert [tuple(row) for row in mirror] == source_rows(
        admin_connection,
        "SELECT order_no, status, amount FROM orders_0 UNION ALL "
        "SELECT order_no, status, amount FROM orders_1 ORDER BY order_no",
    )
    assert len(mirror) == 2
