-- The databases of the local stack's PostgreSQL (tidemark/stack/postgres.py) beyond the JDBC
-- catalog's, which POSTGRES_DB creates, for docker-compose.yml: the REST catalog's own.
CREATE DATABASE tidemark_rest_catalog OWNER tidemark;
