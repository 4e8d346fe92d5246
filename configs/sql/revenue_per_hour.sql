-- Revenue per product and hour, for the hour [${window_start}, ${window_end}).
-- MERGE makes a retried window idempotent.
CREATE NAMESPACE IF NOT EXISTS tidemark.report;
CREATE TABLE IF NOT EXISTS tidemark.report.revenue_per_hour (
    hour TIMESTAMP,
    product_id BIGINT,
    revenue DECIMAL(38, 2)
) USING iceberg;

MERGE INTO tidemark.report.revenue_per_hour AS t
USING (
    SELECT date_trunc('hour', o.created_at) AS hour,
           i.product_id,
           sum(i.quantity * i.unit_price) AS revenue
    FROM tidemark.shop.orders AS o
    JOIN tidemark.shop.order_items AS i ON i.order_id = o.id
    WHERE o.created_at >= TIMESTAMP '${window_start}' AND o.created_at < TIMESTAMP '${window_end}'
    GROUP BY 1, 2
) AS s
ON t.hour = s.hour AND t.product_id = s.product_id
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *
