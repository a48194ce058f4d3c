import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, startProcess } from "../../test/testing/process-stack.ts";
import { ensureBuilt } from "../server/build.ts";
import { launch, printedRootKey, seriousViolations } from "./browser.ts";

// The Policies page as a person uses it: Debian's Chromium driving the console `npm start` serves, the
// test checking through the API (forwardAuth.listPolicies) what each click did.

const dataDir = mkdtempSync(join(tmpdir(), "latchkey-console-policies-"));
const SLOW = { timeout: 30_000, interval: 200 };

let latchkey: Proc;
let browser: Browser;
let rootKey: string;
let origin: string;

beforeAll(async () => {
  await ensureBuilt();
  latchkey = await startProcess("latchkey", "apps/latchkey/src/start.ts", {
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    NATS_URL: "",
    METRICS_PORT: "0",
  });
  rootKey = await printedRootKey(latchkey);
  origin = latchkey.url;
  browser = await launch();
});

afterAll(async () => {
  await browser?.close();
  await latchkey?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function post(operation: string, body: unknown) {
  const res = await fetch(`${origin}/v2/${operation}`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** The workspace's policies as the API lists them: [name, position, dryRun]. */
async function stored(): Promise<[string, number | undefined, boolean][]> {
  const { body } = await post("forwardAuth.listPolicies", {});
  return body.data.map((p: any) => [p.policy.name, p.position, p.policy.dryRun === true]);
}

async function createThroughPage(page: Page, policy: unknown) {
  await page.getByRole("button", { name: "Create a policy" }).click();
  await page.getByLabel("Policy (JSON)").fill(JSON.stringify(policy));
  await page.getByRole("button", { name: "Create policy" }).click();
  await page.getByRole("button", { name: "Create a policy" }).waitFor();
}

describe("the Policies page", { timeout: 180_000 }, () => {
  it("lists in order, creates, edits, reorders, switches dry run and deletes, with no serious accessibility violation", async () => {
    const apiId = (await post("apis.createApi", { name: "edge" })).body.data.apiId;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: origin });
    const page = await context.newPage();
    try {
      await page.goto("/");
      await page.getByLabel("Root key").fill(rootKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page
        .getByRole("navigation", { name: "Sections" })
        .getByRole("link", { name: "Policies" })
        .click();
      await page.getByRole("heading", { name: "Forward-auth policies", level: 1 }).waitFor();
      await page.getByText("No policies yet").waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      await createThroughPage(page, { name: "orders", paths: ["/orders/**"], apiId });
      await createThroughPage(page, { name: "admin", paths: ["/admin/**"], apiId });
      await expect.poll(stored, SLOW).toEqual([
        ["orders", 0, false],
        ["admin", 1, false],
      ]);
      const table = page.getByRole("region", { name: "Policies" });
      await expect.poll(() => table.getByRole("row").count(), SLOW).toBe(3);
      expect(await seriousViolations(page)).toEqual([]);

      // The API's refusal is shown as written, at the field it names.
      await page.getByRole("button", { name: "Create a policy" }).click();
      await page
        .getByLabel("Policy (JSON)")
        .fill(JSON.stringify({ name: "q", apiId, key: { from: "query" } }));
      await page.getByRole("button", { name: "Create policy" }).click();
      await page.getByText("a key read from a query needs the query's name").first().waitFor();
      await page.getByRole("button", { name: "Cancel" }).click();

      await table.getByRole("button", { name: "Move admin up" }).click();
      await expect.poll(stored, SLOW).toEqual([
        ["admin", 0, false],
        ["orders", 1, false],
      ]);
      await table.getByRole("checkbox", { name: "Dry run for orders" }).click();
      await expect.poll(stored, SLOW).toEqual([
        ["admin", 0, false],
        ["orders", 1, true],
      ]);

      await table
        .getByRole("row", { name: /orders/ })
        .getByRole("button", { name: "Edit" })
        .click();
      await page
        .getByLabel("Policy (JSON)")
        .fill(JSON.stringify({ name: "orders", paths: ["/orders/**"], apiId, permissions: "orders.read" }));
      await page.getByRole("button", { name: "Save policy" }).click();
      await expect
        .poll(async () => (await post("forwardAuth.listPolicies", {})).body.data[1].policy.permissions, SLOW)
        .toBe("orders.read");

      await table.getByRole("button", { name: "Delete policy admin" }).click();
      await page.getByRole("button", { name: "Delete admin" }).click();
      await expect.poll(stored, SLOW).toEqual([["orders", 0, false]]);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
