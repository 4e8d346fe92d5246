-- The least-privilege account Tidemark's ingest uses (DESIGN.md section 5): read rows, stream the
-- binlog, nothing else. Same name and default password as the local stack's MariaDB.
CREATE USER IF NOT EXISTS 'tidemark_cdc'@'%' IDENTIFIED BY 'tidemark-cdc';
GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'tidemark_cdc'@'%';
-- An account for workloads and `tidemark verify`, as the local stack has.
CREATE USER IF NOT EXISTS 'tidemark_admin'@'%' IDENTIFIED BY 'tidemark-admin';
GRANT ALL PRIVILEGES ON *.* TO 'tidemark_admin'@'%' WITH GRANT OPTION;
