import { checkRawQuery } from "./raw-query.ts";

const scope = { workspaceId: "ws_1", apiIds: undefined };
const q1 =
  "SELECT outcome, count() AS total FROM key_verifications_v1 WHERE time > 1 GROUP BY outcome ORDER BY total DESC LIMIT 10";
const parts = [];
for (let i = 0; i < 150; i++) parts.push(`(key_id = 'k${i}' AND outcome = 'VALID')`);
const q2 = `SELECT key_id, count() FROM key_verifications_v1 WHERE ${parts.join(" OR ")} GROUP BY key_id`;
const q3 = "SELECT " + "(".repeat(39) + "1" + ")".repeat(39) + " FROM key_verifications_v1";
for (const q of [q1, q2, q3]) {
  for (let i = 0; i < 3; i++) {
    try {
      checkRawQuery(q, scope);
    } catch {}
  }
  const t = performance.now();
  let n = 0;
  while (performance.now() - t < 1000) {
    try {
      checkRawQuery(q, scope);
    } catch (e) {
      if (n === 0) console.log(String(e).slice(0, 200));
    }
    n++;
  }
  console.log(q.length, "chars", ((performance.now() - t) / n).toFixed(3), "ms per check");
}
