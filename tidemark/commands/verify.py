"""``tidemark verify FILE``: does every mirror table equal its MySQL source? Exit 1 if not."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tidemark.commands import Command

if TYPE_CHECKING:
    from tidemark.config.model import PipelineConfig

#: keys listed per kind of difference; the counts are always complete
_SHOWN = 20


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    parser.add_argument("--table", help="only this sink table")
    parser.add_argument(
        "--page-rows", type=int, default=10_000, help="rows compared per primary-key page"
    )
    parser.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    from tidemark.config import load_pipeline

    failures = verify_pipeline(load_pipeline(args.file), sys.stdout, args.table, args.page_rows)
    return 1 if failures else 0


def verify_pipeline(
    config: PipelineConfig, out: TextIO, table: str | None = None, page_rows: int = 10_000
) -> int:
    """Compare every mirror of ``config`` (or only ``table``'s) with its source, writing a
    verdict per mirror to ``out``; returns how many mirrors differ or could not be verified."""
    # Imported here: `tidemark validate` must not pay for pyarrow and PyIceberg.
    from pyiceberg.exceptions import NoSuchTableError

    from ingest.schema.source_tables import read_source_tables
    from ingest.verify import MirrorUnderTest, verify_mirror
    from tidemark.catalog import load_catalog
    from tidemark.config.inventory import read_tables
    from tidemark.config.model import reveal
    from tidemark.config.plan import build_plan

    catalog = load_catalog(config.tidemark.catalog_name, reveal(config.sink.catalog_properties))
    source = config.source.connection()
    plan = build_plan(config, read_tables(source, config.source.captures))
    failures = 0
    for sink in plan.sinks:
        if sink.mirror is None or (table and table != sink.name):
            continue
        try:
            mirror = catalog.load_table(sink.mirror)
            changelog = catalog.load_table(sink.changelog)
        except NoSuchTableError as error:
            out.write(f"{sink.name}: no mirror to verify yet ({error})\n")
            failures += 1
            continue
        names = [_split(name) for name in sink.sources]
        with source.connect() as conn:
            members = read_source_tables(conn, names)
        verdict = verify_mirror(
            source,
            MirrorUnderTest(mirror, changelog, sink.key, list(members.values())),
            page_rows=page_rows,
            server_time_zone=config.source.server_time_zone,
            tinyint1_as_boolean=config.source.treat_tinyint1_as_boolean,
        )
        state = "OK" if verdict.mismatches == 0 else "MISMATCH"
        out.write(
            f"{sink.mirror}: {state}, {verdict.source_rows} source rows, "
            f"{len(verdict.missing)} missing, {len(verdict.extra)} extra, "
            f"{len(verdict.different)} different, {len(verdict.in_flight)} in flight\n"
        )
        for label, keys in (
            ("missing", verdict.missing),
            ("extra", verdict.extra),
            ("different", verdict.different),
        ):
            for key in keys[:_SHOWN]:
                out.write(f"  {label}: {', '.join(map(repr, key))}\n")
        failures += verdict.mismatches > 0
    return failures


def _split(table_id: str) -> tuple[str, str]:
    database, table = table_id.split(".", 1)
    return database, table


COMMAND = Command("verify", "compare every mirror table with its MySQL source", _configure)
