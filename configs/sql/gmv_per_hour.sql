-- GMV per hour and order status: a T+1 report that runs unchanged for every window.
-- ${hivevar:db} holds the mirrors, ${hivevar:report_db} the report (job variables); Tidemark sets
-- ${dt}, ${hour}, ${window_start} and ${window_end} for each window.
CREATE TABLE IF NOT EXISTS ${hivevar:report_db}.gmv_per_hour (
    status STRING,
    orders BIGINT,
    gmv DECIMAL(20, 2),
    dt STRING,
    hour STRING
) USING iceberg
PARTITIONED BY (dt, hour);

-- INSERT OVERWRITE of the window's own partition: running a window again replaces its rows
INSERT OVERWRITE ${hivevar:report_db}.gmv_per_hour PARTITION (dt = '${dt}', hour = '${hour}')
SELECT status, count(*) AS orders, sum(amount) AS gmv
FROM ${hivevar:db}.orders
WHERE created_at >= TIMESTAMP '${window_start}' AND created_at < TIMESTAMP '${window_end}'
GROUP BY status;
