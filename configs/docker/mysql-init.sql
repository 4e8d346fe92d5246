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
-- Optional (tidemark.ingest.snapshot-resource-group): the bootstrap's reads at the lowest
-- thread priority, so that a busy server gives them only the CPU its own work leaves. MySQL
-- applies a priority only with the CAP_SYS_NICE capability (cap_add: [SYS_NICE] on the mysql
-- service of docker-compose.yml).
-- CREATE RESOURCE GROUP tidemark_snapshot TYPE = USER THREAD_PRIORITY = 19;
-- GRANT RESOURCE_GROUP_USER ON *.* TO 'tidemark_cdc'@'%';
