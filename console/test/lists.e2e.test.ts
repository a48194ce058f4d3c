import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { BrowserContext, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleUnderTest, seriousViolations, watch } from "./browser.ts";

// The APIs and Rate limits pages list what exists (apis.listApis, ratelimits.listNamespaces), whatever browser
// signs in, and chart rate-limit checks (analytics.getRatelimits' structured form): Debian's Chromium against
// `npm start` on its embedded storage, with no ClickHouse.

const root = join(import.meta.dirname, "..", "..");
const run = promisify(execFile);
const lk = consoleUnderTest("console-lists");
const { post } = lk;
const SLOW = { timeout: 30_000, interval: 200 };
/** CONSOLE_SCREENSHOTS=docs/images writes the pages' screenshots there. */
const shots = process.env["CONSOLE_SCREENSHOTS"];

/** A root key of the default workspace holding `permissions`, made with the CLI as an operator would. */
async function rootKeyWith(...permissions: string[]): Promise<string> {
  const { stdout } = await run(
    join(root, "node_modules/.bin/tsx"),
    [join(root, "apps/latchkey/src/cli.ts"), "root-key", "create", "--permissions", permissions.join(",")],
    { env: { ...process.env, DATA_DIR: lk.dataDir, DATABASE_URL: "", NATS_URL: "" } },
  );
  return stdout.trim().split("\n").at(-1)!;
}

/** A fresh browser: nothing of another session in its storage. */
async function freshBrowser(width: number, height = 900): Promise<{ context: BrowserContext; page: Page }> {
  const context = await lk.browser.newContext({ viewport: { width, height }, baseURL: lk.origin });
  return { context, page: await context.newPage() };
}

async function signIn(page: Page, key = lk.rootKey) {
  await page.goto("/");
  await page.getByLabel("Root key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Sections" }).waitFor();
}

async function settled(page: Page) {
  await expect.poll(() => page.getByRole("status").filter({ hasText: "Loading" }).count(), SLOW).toBe(0);
}

const rowsOf = (page: Page, table: string) => page.getByRole("region", { name: table }).locator("tbody tr");

describe("the console's lists, in a browser that created nothing", { timeout: 180_000 }, () => {
  let apiIds: string[];

  beforeAll(async () => {
    apiIds = [];
    for (const name of ["billing", "search", "uploads"]) {
      apiIds.push((await post("apis.createApi", { name })).body.data.apiId);
    }
    // Checks in two namespaces: email.outbound passes 3 of 5 for user_1 and both of user_2's, sms passes 1.
    const check = (namespace: string, identifier: string, limit: number) =>
      post("ratelimits.limit", { namespace, identifier, limit, duration: 60_000 });
    for (let i = 0; i < 5; i++) await check("email.outbound", "user_1", 3);
    for (let i = 0; i < 2; i++) await check("email.outbound", "user_2", 3);
    await check("sms", "user_1", 1);
  });

  it("lists every API and namespace to a root key holding *, with the checks of the last 24 hours charted", async () => {
    const { context, page } = await freshBrowser(1280);
    const seen = watch(context, lk.origin);
    try {
      await signIn(page);
      await page.getByRole("link", { name: "APIs", exact: true }).click();
      await page.getByRole("heading", { name: "APIs", level: 1 }).waitFor();
      await expect.poll(() => rowsOf(page, "APIs").count(), SLOW).toBe(3);
      expect(await rowsOf(page, "APIs").locator("td:first-child").allTextContents()).toEqual(
        expect.arrayContaining(["billing", "search", "uploads"]),
      );
      await settled(page);
      expect(await seriousViolations(page)).toEqual([]);
      if (shots) await page.screenshot({ path: join(resolve(root, shots), "apis.png"), fullPage: true });
      await page.getByRole("link", { name: "search" }).click();
      await page.getByRole("heading", { name: "search", level: 1 }).waitFor();

      await page.getByRole("link", { name: "Rate limits", exact: true }).click();
      await page.getByRole("heading", { name: "Rate limits", level: 1 }).waitFor();
      await expect.poll(() => rowsOf(page, "Namespaces").count(), SLOW).toBe(2);
      // The embedded store writes checks every 100 ms: the counts arrive within moments.
      const email = rowsOf(page, "Namespaces").filter({ hasText: "email.outbound" });
      await expect
        .poll(() => email.locator("td").allTextContents(), SLOW)
        .toEqual(["email.outbound", expect.stringMatching(/^rlns_/), "5", "2"]);
      await expect
        .poll(async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return page.getByTestId("ratelimit-summary").textContent();
        }, SLOW)
        .toBe("8 checks in this range: 6 passed, 2 refused.");
      await settled(page);
      expect(await seriousViolations(page)).toEqual([]);
      if (shots)
        await page.screenshot({ path: join(resolve(root, shots), "rate-limits.png"), fullPage: true });

      // A namespace's page charts its own checks, per identifier in the table behind the chart.
      await email.getByRole("link", { name: "email.outbound" }).click();
      await page.getByRole("heading", { name: "email.outbound", level: 1 }).waitFor();
      await expect
        .poll(() => page.getByTestId("ratelimit-summary").textContent(), SLOW)
        .toBe("7 checks in this range: 5 passed, 2 refused.");
      await page.getByText("Show the table").click();
      const table = page.getByRole("region", { name: "Checks in email.outbound, as a table" });
      await expect
        .poll(() => table.locator("tbody tr").evaluateAll((rows) => rows.map((r) => r.textContent)), SLOW)
        .toEqual([expect.stringMatching(/user_132$/), expect.stringMatching(/user_220$/)]);
      await settled(page);
      expect(await seriousViolations(page)).toEqual([]);
      if (shots) await page.screenshot({ path: join(resolve(root, shots), "namespace.png"), fullPage: true });
      expect(seen.errors).toEqual([]);
      expect(seen.cspViolations).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("lists to a narrower root key exactly what it may read, and still offers to open the rest by name", async () => {
    const narrow = await rootKeyWith(`api.${apiIds[2]}.read_api`, "ratelimit.*.limit");
    const { context, page } = await freshBrowser(1280);
    try {
      await signIn(page, narrow);
      await page.getByRole("link", { name: "APIs", exact: true }).click();
      await expect.poll(() => rowsOf(page, "APIs").count(), SLOW).toBe(1);
      expect(await rowsOf(page, "APIs").locator("td:first-child").textContent()).toBe("uploads");
      // No namespace may be read: the API's 403 says which permission, and a namespace opens by name.
      await page.getByRole("link", { name: "Rate limits", exact: true }).click();
      await page.getByRole("alert").filter({ hasText: "ratelimit.*.read_namespace" }).first().waitFor();
      await page.getByLabel("Namespace").fill("sms");
      await page.getByRole("button", { name: "Open" }).click();
      await page.getByRole("heading", { name: "sms", level: 1 }).waitFor();
      await settled(page);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("fits 390 pixels wide with no serious accessibility violation", async () => {
    const { context, page } = await freshBrowser(390, 844);
    try {
      await signIn(page);
      for (const [hash, heading] of [
        ["#/apis", "APIs"],
        ["#/ratelimits", "Rate limits"],
        ["#/ratelimits/email.outbound", "email.outbound"],
      ] as const) {
        await page.goto(`/${hash}`);
        await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
        await settled(page);
        expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), hash).toBe(
          true,
        );
        expect(await seriousViolations(page), hash).toEqual([]);
      }
    } finally {
      await context.close();
    }
  });
});
