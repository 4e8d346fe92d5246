-- The accounts of the local stack's MySQL (tidemark/stack/mysql.py), for docker-compose.yml.
-- tidemark_cdc is the least-privilege account ingest uses (docs/architecture.md#source-facts):
-- read rows and stream the binlog, nothing else. tidemark_admin is for workloads, the demo and
-- `tidemark verify`.
CREATE USER IF NOT EXISTS 'tidemark_admin'@'%' IDENTIFIED BY 'tidemark-admin';
GRANT ALL PRIVILEGES ON *.* TO 'tidemark_admin'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'tidemark_cdc'@'%' IDENTIFIED BY 'tidemark-cdc';
GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'tidemark_cdc'@'%';
-- the bootstrap's low watermark: performance_schema.log_status
GRANT BACKUP_ADMIN ON *.* TO 'tidemark_cdc'@'%';
