"""What commands and the demo show people: tables, progress and live views, one module a kind.

Each takes what a ``tidemark.pipeline.Pipeline`` method returned and renders it; none reads a
catalog, a source or the scheduler's state itself.
"""
