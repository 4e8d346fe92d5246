"""SeaweedFS (``weed mini``) as the stack's S3-compatible object store: the warehouse of the REST
catalog, as S3 is in production."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from pyarrow import fs

from tidemark.stack.installer import ensure_seaweedfs
from tidemark.stack.process import port_is_open, spawn_daemon
from tidemark.stack.service import Service
from tidemark.stack.settings import SEAWEEDFS_VERSION, ObjectStorePorts

#: the stack's one key pair, local like its database passwords; SeaweedFS makes it an admin
ACCESS_KEY_ID, SECRET_ACCESS_KEY = "tidemark", "tidemark-secret"
#: SeaweedFS takes any region; S3 clients want one
REGION = "us-east-1"
BUCKET = "warehouse"
#: Go's heap target: without one SeaweedFS keeps ~470 MB after a burst of writes; at 192MiB
#: it collects so often that a PUT takes three times as long, and at 320MiB so did it after
#: the thousand-table benchmark (its heap at the limit, a commit 104-118 ms against 35 ms)
GO_MEMORY_LIMIT = "640MiB"


class ObjectStore(Service):
    name = "object_store"

    @property
    def port(self) -> int:
        return self.settings.object_store_port

    @property
    def ports(self) -> tuple[int, ...]:
        return self.settings.object_store_ports.all()

    @property
    def weed(self) -> Path:
        return self.settings.seaweedfs_dir / "bin" / "weed"

    def install(self) -> None:
        ensure_seaweedfs(self.settings.seaweedfs_dir, SEAWEEDFS_VERSION)
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)

    def _launch(self) -> subprocess.Popen[bytes]:
        environment = {
            **os.environ,
            # the keys become SeaweedFS's admin identity; in the environment, not on the
            # command line, where any user's ps would show the secret
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "GOMEMLIMIT": GO_MEMORY_LIMIT,
        }
        return spawn_daemon(
            [
                str(self.weed),
                "mini",
                *weed_mini_flags(
                    self.data_dir / "data", self.settings.host, self.settings.object_store_ports
                ),
            ],
            log=self.log,
            pid_file=self.pid_file,
            cwd=self.data_dir,
            env=environment,
        )

    def is_healthy(self) -> bool:
        """Whether the bucket lists with the stack's keys: S3, the keys and the bucket at once."""
        if not port_is_open(self.settings.host, self.port):
            return False
        try:
            self.filesystem().get_file_info(fs.FileSelector(BUCKET))
        except OSError:  # pyarrow's S3 errors, the store still starting among them
            return False
        return True

    def filesystem(self, secret_access_key: str = SECRET_ACCESS_KEY) -> fs.S3FileSystem:
        """pyarrow's S3 client for the store, quick to give up: for checks, not for data."""
        return fs.S3FileSystem(
            access_key=ACCESS_KEY_ID,
            secret_key=secret_access_key,
            region=REGION,
            endpoint_override=self.url,
            connect_timeout=1,
            request_timeout=2,
            retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
        )

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    def endpoint(self) -> dict[str, Any]:
        return {
            "endpoint": self.url,
            "region": REGION,
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
            "bucket": BUCKET,
        }


def weed_mini_flags(data: Path, host: str, ports: ObjectStorePorts) -> list[str]:
    """``weed mini``'s flags: every port pinned, on ``host`` alone, no extra servers.

    Unpinned, SeaweedFS listens on every address and advertises the machine's, and its admin
    server takes a gRPC port inside the ephemeral range. It saves these flags in
    ``mini.options`` under ``data``; flags given on its command line win over that file.
    """
    return [
        f"-dir={data}",
        f"-ip={host}",
        f"-ip.bind={host}",
        *(
            flag
            for component, port in (
                ("s3", ports.s3),
                ("master", ports.master),
                ("volume", ports.volume),
                ("filer", ports.filer),
                ("admin", ports.admin),
            )
            for flag in (f"-{component}.port={port}", f"-{component}.port.grpc={ports.grpc(port)}")
        ),
        # the REST catalog is Iceberg's own server (rest_catalog.py); SeaweedFS's Iceberg and
        # Lance catalogs, its WebDAV server and its admin web pages stay off
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        # no anonymous usage reports to seaweedfs.com
        "-master.telemetry=false",
        # without -volume.max SeaweedFS reserves a volume per 64 MB of free disk; 16 (1 GB)
        # were 9 full after one thousand-table benchmark. A volume takes disk only as it fills
        "-master.volumeSizeLimitMB=64",
        "-volume.max=64",
        f"-bucket={BUCKET}",
    ]
