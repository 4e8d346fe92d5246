"""The benchmarks' view of the two lakes, in its pure parts: metadata versions, where a
namespace's objects are, and what its files add up to."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.lakes import metadata_version, s3_prefix, scan_folder, tally


def test_a_metadata_files_version_counts_the_tables_commits() -> None:
    assert metadata_version("file:///w/ns/t_changelog/metadata/00042-9f45-4e22.metadata.json") == 42
    assert metadata_version("file:/w/ns/t/metadata/00000-a.gz.metadata.json") == 0
    # the REST server's JdbcCatalog names them as PyIceberg does
    assert metadata_version("s3://warehouse/ns/t/metadata/00007-5f4c-47c0.metadata.json") == 7


@pytest.mark.parametrize(
    ("warehouse", "prefix"),
    [
        ("s3://warehouse/", "warehouse/scale_n10"),
        ("s3://warehouse", "warehouse/scale_n10"),
        ("s3://lake/tidemark/prod/", "lake/tidemark/prod/scale_n10"),
    ],
)
def test_a_namespaces_objects_are_under_the_warehouse(warehouse: str, prefix: str) -> None:
    assert s3_prefix(warehouse, "scale_n10") == prefix


def test_the_tally_sums_bytes_and_counts_only_each_tables_metadata_json() -> None:
    usage = tally(
        [
            ("t_0000_changelog/metadata/00000-a.metadata.json", 1500),
            ("t_0000_changelog/metadata/00001-b.metadata.json", 2500),
            ("t_0000_changelog/metadata/snap-1-0-c.avro", 1800),
            ("t_0000_changelog/data/event_day=2026-01-01/00000-0-c.parquet", 3900),
            ("t_0000/metadata/00003-d.metadata.json", 700),
            ("stray.metadata.json", 10),
        ]
    )

    assert usage.bytes == 10_410
    assert usage.metadata_files == {"t_0000_changelog": 2, "t_0000": 1}


def test_the_folder_scan_counts_each_tables_metadata_files(tmp_path: Path) -> None:
    for table, count in (("t_0000_changelog", 3), ("t_0000", 1)):
        metadata = tmp_path / table / "metadata"
        metadata.mkdir(parents=True)
        for version in range(count):
            (metadata / f"{version:05d}-x.metadata.json").write_text("{}")
        (metadata / "snap-1.avro").write_text("x" * 5000)

    folder = scan_folder(tmp_path)

    assert folder.metadata_files == {"t_0000_changelog": 3, "t_0000": 1}
    assert folder.bytes >= 2 * 5000


def test_a_folder_not_there_yet_holds_nothing(tmp_path: Path) -> None:
    assert scan_folder(tmp_path / "missing").bytes == 0
