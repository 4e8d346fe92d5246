"""Tidemark: MySQL change data capture into Iceberg, merged every five minutes by Spark.

This package holds what ingest, scheduler and spark_jobs share: errors, the command line,
catalog access and the local service stack.
"""

from __future__ import annotations

__version__ = "0.1.0"
