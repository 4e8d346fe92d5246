"""``tidemark demo``: a small shop in MariaDB, a workload, and the whole pipeline over it, live."""
