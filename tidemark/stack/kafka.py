"""An Apache Kafka broker in KRaft mode, from Maven Central's jars, on the machine's Java."""

from __future__ import annotations

import base64
import shutil
import subprocess
import uuid
from importlib import resources
from typing import Any

from confluent_kafka.admin import AdminClient

from tidemark.errors import TerminalError
from tidemark.stack.installer import MINIMUM_JAVA, ensure_java, resolve_maven_jars
from tidemark.stack.process import port_is_open, run, spawn_daemon
from tidemark.stack.service import Service
from tidemark.stack.settings import KAFKA_VERSION

_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{host}:{controller_port}
listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}
advertised.listeners=PLAINTEXT://{host}:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={log_dirs}
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
"""


class Kafka(Service):
    name = "kafka"

    @property
    def port(self) -> int:
        return self.settings.kafka_port

    @property
    def jars(self) -> str:
        return str(self.settings.jars_dir / "kafka" / "*")

    def install(self) -> None:
        ensure_java(MINIMUM_JAVA)
        resolve_maven_jars(
            "kafka-pom.xml",
            self.settings.jars_dir / "kafka",
            {"kafka.version": KAFKA_VERSION},
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.settings.logs_dir.mkdir(parents=True, exist_ok=True)
        log4j = resources.files("tidemark.stack").joinpath("resources", "log4j2.properties")
        (self.data_dir / "log4j2.properties").write_text(log4j.read_text())
        properties = self.data_dir / "server.properties"
        properties.write_text(
            _SERVER_PROPERTIES.format(
                host=self.settings.host,
                port=self.port,
                controller_port=self.settings.kafka_controller_port,
                log_dirs=self.data_dir / "logs",
            )
        )
        if (self.data_dir / "logs" / "meta.properties").exists():
            return
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        run(
            [
                *self._java(heap="256m"),
                "kafka.tools.StorageTool",
                "format",
                # one argument: an id may start with "-", which the tool would read as a flag
                f"--cluster-id={cluster_id}",
                "--config",
                str(properties),
            ],
            what="formatting the Kafka log folder",
        )

    def _launch(self) -> subprocess.Popen[bytes]:
        return spawn_daemon(
            [
                *self._java(heap=self.settings.kafka_heap),
                "kafka.Kafka",
                str(self.data_dir / "server.properties"),
            ],
            log=self.log,
            pid_file=self.pid_file,
            cwd=self.data_dir,
        )

    def is_healthy(self) -> bool:
        if not port_is_open(self.settings.host, self.port):
            return False
        # log_level 0: a broker still starting is expected, not worth librdkafka's stderr lines
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        try:
            metadata = admin.list_topics(timeout=2)
        except Exception:  # confluent-kafka raises KafkaException and friends while starting
            return False
        return bool(metadata.brokers)

    def endpoint(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers}

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.settings.host}:{self.port}"

    def _java(self, heap: str) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise TerminalError("no 'java' on PATH; install Java 17 (openjdk-17-jre-headless)")
        return [
            java,
            f"-Xmx{heap}",
            f"-Xms{heap}",
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            "-Djava.awt.headless=true",
            "-cp",
            self.jars,
        ]
