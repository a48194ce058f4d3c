import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./bundle.ts";

// The read-only query user's profile is written four times, once per way of running ClickHouse: the test
// servers' script, the Kubernetes ConfigMap, Docker Compose's first-start SQL and the SQL in the docs. Its
// settings are its limits and its tenant isolation (docs/analytics-queries.md), so all four must hold the same.

const read = (...path: string[]) => readFileSync(join(repoRoot, ...path), "utf8");

/** scripts/clickhouse-users.sh: its `settings` and `later` arrays, as name=value lines. */
function fromScript(): Map<string, string> {
  const text = read("scripts", "clickhouse-users.sh");
  const entries = new Map<string, string>();
  for (const array of ["settings", "later"]) {
    const body = new RegExp(`^${array}=\\(\\n([\\s\\S]*?)^\\)`, "m").exec(text)?.[1];
    expect(body, `the ${array} array`).toBeDefined();
    for (const m of body!.matchAll(/^\s+([a-z0-9_]+)=(\S+)$/gm)) entries.set(m[1]!, m[2]!);
  }
  return entries;
}

/** deploy/k8s/deps/clickhouse.yaml: the latchkey_query profile's elements. */
function fromKubernetes(): Map<string, string> {
  const text = read("deploy", "k8s", "deps", "clickhouse.yaml");
  const profile = /<profiles>\s*<latchkey_query>([\s\S]*?)<\/latchkey_query>/.exec(text)?.[1] ?? "";
  return new Map([...profile.matchAll(/<([a-z0-9_]+)>([^<]*)<\/\1>/g)].map((m) => [m[1]!, m[2]!]));
}

/** `CREATE SETTINGS PROFILE … SETTINGS a = 1, b = 'x';` in a text. */
function fromSql(text: string): Map<string, string> {
  const body =
    /CREATE SETTINGS PROFILE IF NOT EXISTS latchkey_query SETTINGS([\s\S]*?);/.exec(text)?.[1] ?? "";
  return new Map(
    body
      .split(",")
      .map((pair) => pair.trim().split(/\s*=\s*/))
      .map(([name, value]) => [name!, value!.replace(/^'|'$/g, "")]),
  );
}

describe("the ClickHouse query user's profile", () => {
  const script = fromScript();

  it("is read from the script, isolation settings and limits included", () => {
    expect(script.get("readonly")).toBe("1");
    expect(script.get("enable_optimize_predicate_expression")).toBe("0");
    expect(script.get("query_plan_filter_push_down")).toBe("0");
    expect(script.size).toBeGreaterThan(20);
  });

  it.each([
    ["deploy/k8s/deps/clickhouse.yaml", fromKubernetes],
    ["deploy/compose.yaml", () => fromSql(read("deploy", "compose.yaml"))],
    ["docs/analytics-queries.md", () => fromSql(read("docs", "analytics-queries.md"))],
  ])("is the same in %s", (_file, parse) => {
    expect(Object.fromEntries(parse())).toEqual(Object.fromEntries(script));
  });
});
