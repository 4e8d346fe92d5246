"""Source table structures and what they become in the lake.

Entry points: ``source_tables.read_source_tables`` (``information_schema``),
``types.arrow_schema`` and ``types.values_converter`` (the type mapping, on the values
``values`` documents), and ``tracker.SchemaTracker`` (follows structure changes from the
binlog: ``ddl`` reads the statements, ``evolution`` decides what a change does to the changelog).
"""
