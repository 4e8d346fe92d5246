"""The local service stack: MariaDB, PostgreSQL (Iceberg catalog), Kafka and Spark's jars.

Installed and started on loopback by ``tidemark stack up``, for the demo and the tests. In
production users point Tidemark at their own servers instead.
"""
