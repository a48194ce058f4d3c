import { checkRawQuery } from "/work/wt/sql/services/analytics/src/raw-query.ts";
const scope = { workspaceId: "ws_1", apiIds: undefined };
const qs = [
  "SELECT COUNT(*) as total FROM key_verifications_v1 WHERE outcome = 'VALID' AND time >= now() - INTERVAL 7 DAY",
  "SELECT * FROM (SELECT 1 AS x) AS array JOIN key_verifications_raw AS r ON 1 = 1 LIMIT 50",
  "SELECT sum(count) AS n, min(time) AS first FROM key_verifications_per_hour_v1",
  "WITH a AS (SELECT key_id FROM key_verifications_v1) SELECT count() FROM a JOIN a AS b USING key_id",
  "SELECT quantile(0.9)(latency), arrayFilter(x -> x != '', tags) FROM key_verifications_v1 v WHERE v.key_id IN ('a','b') AND tags[1] = 'x' LIMIT 5 OFFSET 1",
  "SELECT * FROM `system`.tables", "SELECT 1 FORMAT JSON", "SELECT * FROM key_verifications_v1 FINAL",
  "SELECT 1 FROM key_verifications_v1 WHERE key_id IN (key_verifications_raw)",
  "SELECT 1; SELECT 2", "SELECT 1 # hi", "select CASE WHEN 1 THEN 'a' ELSE 'b' END, CAST(1 AS String), -1, 1 || 'x' from key_verifications_v1 -- c",
  "SELECT count() FROM key_verifications_v1, key_verifications_v1",
  "SELECT " + "(".repeat(50) + "1" + ")".repeat(50),
  "SELECT " + "1+".repeat(3000) + "1",
];
for (const q of qs) {
  const t = performance.now();
  try { console.log("OK ", (performance.now()-t).toFixed(1), checkRawQuery(q, scope).sql.slice(0, 400)); }
  catch (e) { console.log("ERR", (performance.now()-t).toFixed(1), (e as Error).message); }
}
