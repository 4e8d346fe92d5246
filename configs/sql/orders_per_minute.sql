-- Orders per minute in the window [${window_start}, ${window_end}), read from the mirror.
-- MERGE makes a retried window idempotent.
CREATE NAMESPACE IF NOT EXISTS tidemark.report;
CREATE TABLE IF NOT EXISTS tidemark.report.orders_per_minute (
    minute TIMESTAMP,
    region STRING,
    orders BIGINT,
    amount DECIMAL(20, 2)
) USING iceberg;

MERGE INTO tidemark.report.orders_per_minute AS t
USING (
    SELECT date_trunc('minute', created_at) AS minute,
           '${region}' AS region,
           count(*) AS orders,
           sum(amount) AS amount
    FROM tidemark.shop.orders
    WHERE created_at >= TIMESTAMP '${window_start}' AND created_at < TIMESTAMP '${window_end}'
    GROUP BY 1
) AS s
ON t.minute = s.minute AND t.region = s.region
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *
