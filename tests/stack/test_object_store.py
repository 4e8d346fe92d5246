"""The stack's S3 store (SeaweedFS): its keys, its bucket, its ports, and the settings that place
it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from pyarrow import fs

from tests.stack_helpers import free_port_block, listening_addresses
from tidemark.app.cli import main
from tidemark.errors import ConfigError
from tidemark.stack.endpoints import ObjectStoreEndpoint, StackEndpoints
from tidemark.stack.object_store import ObjectStore, weed_mini_flags
from tidemark.stack.service import ServiceFailedError
from tidemark.stack.settings import (
    MAX_OBJECT_STORE_PORT,
    OBJECT_STORE_HTTP_PORTS,
    SEAWEEDFS_GRPC_OFFSET,
    ObjectStorePorts,
    StackSettings,
)
from tidemark.stack.stack import Stack


def s3(
    store: ObjectStoreEndpoint, *, key: str | None = None, secret: str | None = None
) -> fs.S3FileSystem:
    return fs.S3FileSystem(
        access_key=key or store.access_key_id,
        secret_key=secret or store.secret_access_key.get_secret_value(),
        region=store.region,
        endpoint_override=store.endpoint,
        retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
    )


def test_the_store_keeps_an_object_in_its_bucket_for_the_stacks_keys(
    endpoints: StackEndpoints, unique_name: str
) -> None:
    store = endpoints.object_store
    client = s3(store)
    path = f"{store.bucket}/{unique_name}/hello.txt"

    with client.open_output_stream(path) as out:
        out.write(b"tidemark")
    with client.open_input_stream(path) as stream:
        read = stream.read()
    client.delete_dir(f"{store.bucket}/{unique_name}")

    assert read == b"tidemark"


@pytest.mark.parametrize(
    ("key", "secret", "refusal"),
    [
        (None, "not-the-secret", "SIGNATURE_DOES_NOT_MATCH"),
        ("stranger", "stranger-secret", "INVALID_ACCESS_KEY_ID"),
    ],
)
def test_the_store_refuses_wrong_keys(
    endpoints: StackEndpoints, key: str | None, secret: str, refusal: str
) -> None:
    store = endpoints.object_store

    with pytest.raises(OSError, match=refusal):
        s3(store, key=key, secret=secret).get_file_info(fs.FileSelector(store.bucket))


def test_the_store_listens_on_its_pinned_ports_on_loopback_only(stack: Stack) -> None:
    (store,) = (daemon for daemon in stack.daemons if isinstance(daemon, ObjectStore))
    pid = store.running_pid()
    assert pid is not None

    assert listening_addresses(pid) == {
        ("127.0.0.1", port) for port in stack.settings.object_store_ports.all()
    }


def test_status_json_carries_the_stores_keys(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stack", "status", "--json"]) == 0

    report = json.loads(capsys.readouterr().out)["services"]["object_store"]
    assert report | {"pid": None} == {
        "healthy": True,
        "pid": None,
        "log": str(stack.settings.log_file("object_store")),
        "endpoint": f"http://127.0.0.1:{stack.settings.object_store_port}",
        "region": "us-east-1",
        "access_key_id": "tidemark",
        "secret_access_key": "tidemark-secret",
        "bucket": "warehouse",
    }


def test_a_taken_grpc_port_of_the_stores_block_is_named_with_the_fix(second_home: Path) -> None:
    first = free_port_block(OBJECT_STORE_HTTP_PORTS, SEAWEEDFS_GRPC_OFFSET)
    store = ObjectStore(StackSettings(home=second_home, object_store_port=first))
    taken = store.settings.object_store_ports.grpc(first + 4)  # the admin server's
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", taken))
        stranger.listen()

        with pytest.raises(ServiceFailedError) as failure:
            store.up()

    assert str(failure.value) == (
        f"object_store: port {taken} on 127.0.0.1 is taken by a process the stack did not "
        "start; stop it or choose another port with TIDEMARK_OBJECT_STORE_PORT"
    )


def test_one_setting_moves_the_stores_whole_block_of_ports() -> None:
    settings = StackSettings.from_env(
        {"TIDEMARK_HOME": "/tmp/x", "TIDEMARK_OBJECT_STORE_PORT": "20100"}
    )

    assert settings.object_store_ports == ObjectStorePorts(
        s3=20100, master=20101, volume=20102, filer=20103, admin=20104
    )
    assert settings.object_store_ports.all() == (
        *range(20100, 20105),
        *range(30100, 30105),
    )


def test_the_default_block_stays_below_the_ephemeral_ports() -> None:
    assert max(StackSettings(home=Path("/tmp/x")).object_store_ports.all()) < 32768


def test_a_store_port_without_room_for_its_grpc_ports_is_refused_with_the_reason() -> None:
    too_high = str(MAX_OBJECT_STORE_PORT + 1)

    with pytest.raises(ConfigError) as refusal:
        StackSettings.from_env({"TIDEMARK_HOME": "/tmp/x", "TIDEMARK_OBJECT_STORE_PORT": too_high})

    assert str(refusal.value) == (
        f"TIDEMARK_OBJECT_STORE_PORT must be at most {MAX_OBJECT_STORE_PORT}: the object store "
        "also listens on the next 4 ports and on each of its ports plus 10000 (gRPC), got: "
        f"{too_high}"
    )


def test_weed_mini_is_pinned_to_its_host_and_ports() -> None:
    flags = weed_mini_flags(Path("/data"), "127.0.0.1", ObjectStorePorts.from_s3_port(20100))

    assert {"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=/data"} <= set(flags)
    assert {"-admin.port=20104", "-admin.port.grpc=30104", "-s3.port.grpc=30100"} <= set(flags)
    assert "-master.telemetry=false" in flags
