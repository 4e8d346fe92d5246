"""The plain library's decode rate, the yardstick of the ingest benchmark.

Run as its own process (``python -m bench.plain_decode``) because importing ``ingest`` changes
the library in place (``ingest.binlog.corrections``, ``ingest.binlog.table_map_cache``): this module
imports nothing of Tidemark, so what it measures is ``mysql-replication`` as published. It
decodes every row event of one database between two binlog positions, counting rows and doing
nothing else, and prints ``{"rows": ..., "seconds": ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--server-id", type=int, required=True)
    parser.add_argument("--database", required=True)
    parser.add_argument("--start", required=True, help="FILE:OFFSET")
    parser.add_argument("--end", required=True, help="FILE:OFFSET")
    args = parser.parse_args()
    password = sys.stdin.readline().rstrip("\n")  # not on the command line, where ps shows it
    start_file, start_offset = _position(args.start)
    end = _position(args.end)
    stream = BinLogStreamReader(
        connection_settings={
            "host": args.host,
            "port": args.port,
            "user": args.user,
            "password": password,
            "charset": "utf8mb4",
        },
        server_id=args.server_id,
        log_file=start_file,
        log_pos=start_offset,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_schemas=[args.database],
    )
    rows = 0
    began = time.perf_counter()
    for event in stream:
        rows += len(event.rows)
        if (stream.log_file, stream.log_pos) >= end:
            break
    seconds = time.perf_counter() - began
    stream.close()
    print(json.dumps({"rows": rows, "seconds": seconds}))  # noqa: T201
    return 0


def _position(text: str) -> tuple[str, int]:
    file, _, offset = text.rpartition(":")
    return file, int(offset)


if __name__ == "__main__":
    sys.exit(main())
