-- Orders placed and revenue paid per customer country in the window
-- [${window_start}, ${window_end}), read from the mirror tables. The same query once ran for a
-- whole day at night; Tidemark runs it, unchanged, for every window.
-- MERGE on (window_start, country) makes a retried window replace its rows, not add to them.
CREATE NAMESPACE IF NOT EXISTS tidemark.demo_report;
CREATE TABLE IF NOT EXISTS tidemark.demo_report.shop_per_window (
    window_start TIMESTAMP,
    window_end TIMESTAMP,
    country STRING,
    orders BIGINT,
    revenue DECIMAL(20, 2)
) USING iceberg;

MERGE INTO tidemark.demo_report.shop_per_window AS t
USING (
    SELECT TIMESTAMP '${window_start}' AS window_start,
           TIMESTAMP '${window_end}' AS window_end,
           country,
           CAST(sum(placed) AS BIGINT) AS orders,
           CAST(sum(paid) AS DECIMAL(20, 2)) AS revenue
    FROM (
        SELECT u.country, 1 AS placed, CAST(0 AS DECIMAL(12, 2)) AS paid
        FROM tidemark.demo.orders o
        JOIN tidemark.demo.users u ON u.id = o.user_id
        WHERE o.created_at >= TIMESTAMP '${window_start}'
          AND o.created_at < TIMESTAMP '${window_end}'
        UNION ALL
        SELECT u.country, 0 AS placed, p.amount AS paid
        FROM tidemark.demo.payments p
        JOIN tidemark.demo.orders o ON o.id = p.order_id
        JOIN tidemark.demo.users u ON u.id = o.user_id
        WHERE p.paid_at >= TIMESTAMP '${window_start}'
          AND p.paid_at < TIMESTAMP '${window_end}'
    ) AS activity
    GROUP BY country
) AS s
ON t.window_start = s.window_start AND t.country = s.country
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *;
