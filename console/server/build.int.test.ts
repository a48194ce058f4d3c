import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { consoleRoot, ensureBuilt } from "./build.ts";

// Built beside console/dist, never into it: other tests serve that one meanwhile.
const into = join(consoleRoot, `.dist-test-${process.pid}`);

afterAll(() => rmSync(into, { recursive: true, force: true }));

describe("ensureBuilt", () => {
  it("leaves one whole build when several starts build at once, and builds no more while it is current", async () => {
    const answers = await Promise.all([ensureBuilt(into), ensureBuilt(into), ensureBuilt(into)]);
    expect(answers).toEqual(["built", "built", "built"]);
    const index = readFileSync(join(into, "index.html"), "utf8");
    const named = [...index.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]!).sort();
    expect(named.length).toBe(2);
    expect(readdirSync(join(into, "assets")).sort()).toEqual(named);
    // The portal web app, built with it: its own script and style under portal/assets/, none of the console's.
    const portal = readFileSync(join(into, "portal", "index.html"), "utf8");
    const portalNamed = [...portal.matchAll(/(?:src|href)="\.\/assets\/([^"]+)"/g)].map((m) => m[1]!).sort();
    expect(portalNamed.length).toBe(2);
    expect(readdirSync(join(into, "portal", "assets")).sort()).toEqual(portalNamed);
    expect(portalNamed.filter((f) => named.includes(f))).toEqual([]);
    expect(portal).not.toMatch(/<script>|<style>| style="/);
    // No build directory of its own is left behind.
    expect(
      readdirSync(consoleRoot).filter((f) => f.startsWith(".dist-") && f !== `.dist-test-${process.pid}`),
    ).toEqual([]);
    expect(await ensureBuilt(into)).toBe("current");
    expect(existsSync(join(into, "favicon.svg"))).toBe(true);
  }, 180_000);
});
