"""The replication stream, decoded into Tidemark's own events (``events``).

Entry points: ``reader.BinlogReader`` (in this process) and ``process.ProcessBinlogReader`` (the
same events, decoded in a child process; what ``tidemark ingest`` uses). The only package that
imports ``mysql-replication``: ``reader`` is the boundary, ``native_loop`` reads a busy binlog's
frequent events from the bytes, ``row_decoders`` compiles a row decoder per table map,
``corrections`` fixes the library's column decoding, ``table_map_cache`` parses a repeated table
map once, and ``event_wire`` is how events cross from the reading process.
"""
