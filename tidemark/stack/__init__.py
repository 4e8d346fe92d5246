"""The local service stack: MariaDB, MySQL, PostgreSQL (the JDBC catalog), an S3 store
(SeaweedFS), an Iceberg REST catalog on them, Kafka and Spark's jars.

Installed and started on loopback by ``tidemark stack up``, for the demo and the tests. In
production users point Tidemark at their own servers instead.
"""
