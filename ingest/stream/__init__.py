"""Binlog events to changelog commits: the ingest loop.

Entry point: ``runner.IngestRunner`` (reads, flushes, commits, reconnects, stops). The decisions
about rows are ``assembler.ChangeAssembler``'s: buffered per transaction in ``change_rows``,
flushed at transaction boundaries, skipped on resume where a table already has them. What a
statement (DDL) does, a stop or following it, is ``statements.StatementPolicy``'s decision.
"""
