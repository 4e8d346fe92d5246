"""Tidemark: MySQL change data capture into Iceberg, merged every five minutes by Spark.

The shared core, which every stage (``ingest``, ``scheduler``, ``spark_jobs``) may use and
which imports none of them: the pipeline file (``config``), what readers of the lake rely on
(``contracts``), what the stages need of a lake format (``sinks``: commits and the changelog
protocols), catalog access, source connections, metrics, windows, the error roots and the
local service stack. ``tidemark.app`` is the roof over the stages: the command line, the
``Pipeline`` facade, the output, the status page and the demo; it alone wires stages together.
"""

from __future__ import annotations

__version__ = "0.1.0"
