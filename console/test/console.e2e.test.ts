import { execFile } from "node:child_process";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { DOMAIN_EVENT_TYPES } from "@latchkey/runtime";
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../src/events.ts";
import { consoleUnderTest, seriousViolations, watch } from "./browser.ts";

// The console as a person uses it: Debian's Chromium driving the console that `npm start` serves, against
// that same Latchkey (embedded storage), and the test checking through the API what the pages did.

const root = join(import.meta.dirname, "..", "..");
const run = promisify(execFile);
const lk = consoleUnderTest("console", {
  // The webhook test's receiver listens on 127.0.0.1; a failed attempt is retried half a second later, and
  // a webhook whose three attempts all failed is disabled.
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  WEBHOOK_RETRY_SCHEDULE_MS: "0,500,500",
  WEBHOOK_DISABLE_AFTER_FAILURES: "3",
});
const { post } = lk;
/** How long an expectation on the page is retried: long enough for a loaded machine. */
const SLOW = { timeout: 30_000, interval: 200 };
/** CONSOLE_SCREENSHOTS=docs/images writes the main pages' screenshots there. */
const shots = process.env["CONSOLE_SCREENSHOTS"];

async function open(width: number, height = 900): Promise<{ context: BrowserContext; page: Page }> {
  const context = await lk.browser.newContext({ viewport: { width, height }, baseURL: lk.origin });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: lk.origin });
  const page = await context.newPage();
  return { context, page };
}

async function signIn(page: Page, key = lk.rootKey) {
  await page.goto("/");
  await page.getByLabel("Root key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Sections" }).waitFor();
}

async function screenshot(page: Page, name: string) {
  if (shots) await page.screenshot({ path: join(resolve(root, shots), `${name}.png`), fullPage: true });
}

/** Once nothing on the page is loading any more. */
async function settled(page: Page) {
  await expect.poll(() => page.getByRole("status").filter({ hasText: "Loading" }).count(), SLOW).toBe(0);
}

/** The page's content is no wider than its viewport: nothing to scroll sideways but tables in their regions. */
async function fitsWidth(page: Page) {
  return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth");
}

describe("the console", { timeout: 180_000 }, () => {
  it("is served at / with its Content-Security-Policy and long-lived hashed assets", async () => {
    const index = await fetch(`${lk.origin}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expect(index.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await index.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(lk.origin + script);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(html).not.toMatch(/<script>|<style>| style="/);
  });

  it("signs in, creates an API and a key, copies it, charts its verification, changes credits, rerolls and deletes it", async () => {
    const { context, page } = await open(1280);
    const seen = watch(context, lk.origin);
    try {
      await page.goto("/");
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, "sign-in");
      // A key Latchkey does not know is refused with the API's own message.
      await page.getByLabel("Root key").fill("lk_root_not_a_real_key_0123456789");
      await page.getByRole("button", { name: "Sign in" }).click();
      const refusal = await post(
        "identities.listIdentities",
        { limit: 1 },
        "lk_root_not_a_real_key_0123456789",
      );
      expect(refusal.status).toBe(401);
      await expect
        .poll(() => page.getByRole("alert").textContent(), SLOW)
        .toContain(refusal.body.error.detail);

      await signIn(page);
      await page.getByText("No APIs yet").waitFor();
      expect(await page.locator("pre.code").textContent()).toContain(`${lk.origin}/v2/apis.createApi`);
      expect(await seriousViolations(page)).toEqual([]);

      await page.getByLabel("Name", { exact: true }).fill("payments");
      await page.getByRole("button", { name: "Create API" }).click();
      await page.getByRole("heading", { name: "payments", level: 1 }).waitFor();
      const apiId = decodeURIComponent(new URL(page.url()).hash.split("/")[2]!);
      expect((await post("apis.getApi", { apiId })).body.data).toEqual({
        id: apiId,
        name: "payments",
        keyFormat: "plain",
        leakPolicy: "revoke",
        expiringNoticeDays: 7,
      });
      await page.getByText("No keys in this API yet").waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      await page.getByRole("link", { name: "Create a key" }).first().click();
      await page.getByRole("heading", { name: "Create a key" }).waitFor();
      await page.getByLabel("Prefix").fill("sk");
      await page.getByLabel("Name", { exact: true }).fill("first key");
      await page.getByLabel("External id").fill("customer_42");
      await page.getByLabel("Meta (JSON object)").fill('{"plan": "pro"}');
      await page.getByLabel("Credits", { exact: true }).fill("10");
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, "create-key");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByText("This is the only time the key is shown").waitFor();
      const key = await page.getByTestId("new-key").inputValue();
      expect(key).toMatch(/^sk_/);
      await page.getByRole("button", { name: "Copy key" }).click();
      await page.getByText("Copied").waitFor();
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(key);
      expect(await seriousViolations(page)).toEqual([]);

      const verified = await post("keys.verifyKey", { key, tags: ["path=/charge"] });
      expect(verified.body.data).toMatchObject({
        valid: true,
        code: "VALID",
        credits: 9,
        meta: { plan: "pro" },
      });

      await page.getByRole("link", { name: "Open the key" }).click();
      await page.getByRole("heading", { name: "first key", level: 1 }).waitFor();
      expect(await page.getByTestId("key-credits").textContent()).toBe("9 remaining");
      // Analytics are written shortly after the verification: Refresh until the chart counts it.
      const chart = page.getByTestId("chart-summary");
      await expect
        .poll(
          async () => {
            await page.getByRole("button", { name: "Refresh" }).click();
            return chart.textContent();
          },
          { timeout: 30_000, interval: 500 },
        )
        .toBe("1 verification in this range: 1 valid.");
      await page.getByText("Show the table").click();
      const row = page
        .getByRole("region", { name: "Verifications of this key, as a table" })
        .locator("tbody tr");
      expect(await row.count()).toBe(1);
      expect(await row.locator("td").allTextContents()).toEqual([
        "1",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
        "1",
        "1",
      ]);
      expect(await page.locator(".plot canvas").count()).toBe(1);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, "key");

      // Credits: set to 50, then take 5 away.
      const credits = page.getByRole("region", { name: "Credits" });
      await credits.getByLabel("Credits", { exact: true }).fill("50");
      await credits.getByRole("button", { name: "Update credits" }).click();
      await expect.poll(() => page.getByTestId("key-credits").textContent(), SLOW).toBe("50 remaining");
      await credits.getByLabel("Change").selectOption("decrement");
      await credits.getByLabel("Credits", { exact: true }).fill("5");
      await credits.getByRole("button", { name: "Update credits" }).click();
      await expect.poll(() => page.getByTestId("key-credits").textContent(), SLOW).toBe("45 remaining");
      const keyId = verified.body.data.keyId;
      expect((await post("keys.getKey", { keyId })).body.data.credits).toEqual({ remaining: 45 });

      // A permission, made on the way (the root key holds rbac.*.create_permission).
      await page.getByLabel("Add permissions").fill("documents.read");
      await page.getByRole("button", { name: "Add permissions" }).click();
      await page.getByRole("button", { name: "Remove permission documents.read" }).waitFor();
      expect((await post("keys.getKey", { keyId })).body.data.permissions).toEqual(["documents.read"]);
      expect((await post("keys.verifyKey", { key, permissions: "documents.read" })).body.data.valid).toBe(
        true,
      );

      // Disable, then enable again.
      await page.getByRole("button", { name: "Disable key" }).click();
      await expect.poll(() => page.getByTestId("key-state").textContent(), SLOW).toBe("disabled");
      expect((await post("keys.verifyKey", { key })).body.data).toMatchObject({
        valid: false,
        code: "DISABLED",
      });
      await page.getByRole("button", { name: "Enable key" }).click();
      await expect.poll(() => page.getByTestId("key-state").textContent(), SLOW).toBe("enabled");

      // Reroll with an hour's grace: both keys verify; the new one is shown once.
      const reroll = page.getByRole("region", { name: "Reroll" });
      await reroll.getByLabel("Grace period").selectOption({ label: "1 hour" });
      await reroll.getByRole("button", { name: "Reroll key" }).click();
      const rerolled = await reroll.getByTestId("new-key").inputValue();
      expect(rerolled).toMatch(/^sk_/);
      expect(rerolled).not.toBe(key);
      expect((await post("keys.verifyKey", { key: rerolled })).body.data.valid).toBe(true);
      expect((await post("keys.verifyKey", { key })).body.data.valid).toBe(true);

      // Delete the original, confirming in a dialog that names it.
      await page.getByRole("button", { name: "Delete key" }).click();
      const dialog = page.getByRole("dialog", { name: "Delete the key “first key”?" });
      await dialog.waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await dialog.getByRole("button", { name: "Delete key" }).click();
      await page.getByRole("heading", { name: "payments", level: 1 }).waitFor();
      expect((await post("keys.verifyKey", { key })).body.data).toMatchObject({
        valid: false,
        code: "NOT_FOUND",
      });
      expect((await post("keys.verifyKey", { key: rerolled })).body.data.valid).toBe(true);
      // The list holds the rerolled key alone, found by its external id.
      await page.getByLabel("External id").fill("customer_42");
      await page.getByRole("button", { name: "Search" }).click();
      await expect
        .poll(() => page.getByRole("region", { name: "Keys" }).locator("tbody tr").count(), SLOW)
        .toBe(1);
      await screenshot(page, "api");

      // The other sections, each without serious accessibility violations.
      for (const [link, heading] of [
        ["Identities", "Identities"],
        ["Permissions & roles", "Permissions and roles"],
        ["Rate limits", "Rate limits"],
        ["Analytics", "Analytics"],
        ["APIs", "APIs"],
      ] as const) {
        await page.getByRole("link", { name: link, exact: true }).click();
        await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
        await settled(page);
        expect(await seriousViolations(page), link).toEqual([]);
        await screenshot(page, link.toLowerCase().replace(/[^a-z]+/g, "-"));
      }
      await page.getByRole("link", { name: "Identities", exact: true }).click();
      await page.getByRole("link", { name: "customer_42" }).click();
      await page.getByRole("heading", { name: "customer_42", level: 1 }).waitFor();
      await page.getByRole("link", { name: "first key" }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Rate limits: an override, then a check that it applies to.
      await page.getByRole("link", { name: "Rate limits", exact: true }).click();
      await page.getByLabel("Namespace").fill("api.requests");
      await page.getByRole("button", { name: "Open" }).click();
      await page.getByRole("heading", { name: "api.requests", level: 1 }).waitFor();
      await page.getByText("This namespace does not exist yet").waitFor();
      const tryForm = page.locator("form", { has: page.getByRole("heading", { name: "Try a limit" }) });
      await tryForm.getByLabel("Identifier").fill("someone");
      await tryForm.getByRole("button", { name: "Check" }).click();
      await expect
        .poll(() => tryForm.getByRole("status").textContent(), SLOW)
        .toMatch(/^Allowed: 9 of 10 left/);
      await page.getByText("No overrides in this namespace").waitFor();
      await page.getByLabel("Identifier").first().fill("user_1");
      await page.getByLabel("Limit", { exact: true }).first().fill("2");
      await page.getByRole("button", { name: "Set override" }).click();
      await page.getByRole("cell", { name: "2 per 1 min" }).waitFor();
      await tryForm.getByLabel("Identifier").fill("user_1");
      await tryForm.getByRole("button", { name: "Check" }).click();
      await expect
        .poll(() => tryForm.getByRole("status").textContent(), SLOW)
        .toMatch(/^Allowed: 1 of 2 left/);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, "namespace");

      // Analytics by tag: only the first verification carried one.
      await page.getByRole("link", { name: "Analytics", exact: true }).click();
      await page.getByLabel("Tags").fill("path=/charge");
      await page.getByRole("button", { name: "Show" }).click();
      await expect
        .poll(() => page.getByTestId("chart-summary").textContent(), SLOW)
        .toBe("1 verification in this range: 1 valid.");

      // The API's reference, served by the same Latchkey, is a link away.
      expect(await page.getByRole("link", { name: "API reference" }).getAttribute("href")).toBe("/docs");
      expect((await fetch(`${lk.origin}/docs`)).status).toBe(200);

      // Sign out forgets the key; it was never in a URL, a cookie or localStorage.
      const stored = (await page.evaluate(
        '({ local: JSON.stringify(localStorage), session: sessionStorage.getItem("latchkey.rootKey") })',
      )) as { local: string; session: string | null };
      expect(stored.session).toBe(lk.rootKey);
      expect(stored.local).not.toContain(lk.rootKey);
      expect(await context.cookies()).toEqual([]);
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("Root key").waitFor();
      expect(await page.evaluate("sessionStorage.length")).toBe(0);
      expect(seen.outside).toEqual([]);
      expect(seen.cspViolations).toEqual([]);
      expect(seen.errors).toEqual([]);
    } catch (err) {
      // What the page showed when it failed, for whoever reads the failure.
      const at = join(tmpdir(), "latchkey-console-failure.png");
      await page.screenshot({ path: at, fullPage: true }).catch(() => {});
      throw new Error(`${(err as Error).message}\n(the page at the failure: ${at})`, { cause: err });
    } finally {
      await context.close();
    }
  });

  it("shows leaked and expiring keys with badges and filters, and edits a key's IP allow-list", async () => {
    const { data: api } = (await post("apis.createApi", { name: "leaky", leakPolicy: "flag" })).body;
    const leaky = (await post("keys.createKey", { apiId: api.apiId, name: "leaky key" })).body.data;
    const soon = (
      await post("keys.createKey", {
        apiId: api.apiId,
        name: "soon key",
        expires: Date.now() + 2 * 86_400_000,
      })
    ).body.data;
    const calm = (await post("keys.createKey", { apiId: api.apiId, name: "calm key" })).body.data;
    // Anyone may report a key; the report is acted on after its answer.
    const reported = await fetch(`${lk.origin}/v2/keys.reportLeak`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key: leaky.key, url: "https://example.com/paste" }),
    });
    expect(reported.status).toBe(200);
    await expect
      .poll(async () => (await post("keys.getKey", { keyId: leaky.keyId })).body.data.leakedAt, SLOW)
      .toBeTypeOf("number");

    const { context, page } = await open(1280);
    try {
      await signIn(page);
      await page.goto(`/#/apis/${api.apiId}`);
      const rows = page.getByRole("region", { name: "Keys" }).locator("tbody tr");
      await expect.poll(() => rows.count(), SLOW).toBe(3);
      const row = (name: string) => rows.filter({ hasText: name });
      expect(await row("leaky key").locator(".badge").allTextContents()).toEqual(["leaked"]);
      expect(await row("soon key").locator(".badge").allTextContents()).toEqual(["expiring"]);
      expect(await row("calm key").locator(".badge").count()).toBe(0);
      await page.getByLabel("Leaked").selectOption("yes");
      await expect.poll(() => rows.count(), SLOW).toBe(1);
      expect(await rows.first().textContent()).toContain("leaky key");
      await page.getByLabel("Leaked").selectOption("any");
      await page.getByLabel("Expiring").selectOption("yes");
      await expect.poll(() => rows.count(), SLOW).toBe(1);
      expect(await rows.first().textContent()).toContain("soon key");
      expect(await seriousViolations(page)).toEqual([]);

      await page.goto(`/#/apis/${api.apiId}/keys/${leaky.keyId}`);
      await page.getByRole("heading", { name: /leaky key/ }).waitFor();
      expect(await page.getByRole("heading", { level: 1 }).locator(".badge").allTextContents()).toEqual([
        "leaked",
      ]);
      await page.getByLabel("Allowed addresses").fill("203.0.113.0/24\n2001:db8::/32");
      await page.getByRole("button", { name: "Save allow-list" }).click();
      await expect
        .poll(async () => (await post("keys.getKey", { keyId: leaky.keyId })).body.data.ipAllowList, SLOW)
        .toEqual(["203.0.113.0/24", "2001:db8::/32"]);
      const outside = await post("keys.verifyKey", { key: leaky.key, ipAddress: "198.51.100.1" });
      expect(outside.body.data).toMatchObject({ valid: false, code: "FORBIDDEN_IP" });
      // A bad entry is the API's 400, shown as written.
      await page.getByLabel("Allowed addresses").fill("not-an-address");
      await page.getByRole("button", { name: "Save allow-list" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toContain("not-an-address");
      expect(calm.keyId).toMatch(/^key_/);
      expect(soon.keyId).toMatch(/^key_/);
    } finally {
      await context.close();
    }
  });

  it("shows the API's 403 message as written when the root key lacks a permission", async () => {
    const { stdout } = await run(
      join(root, "node_modules/.bin/tsx"),
      [join(root, "apps/latchkey/src/cli.ts"), "root-key", "create", "--permissions", "api.*.read_api"],
      { env: { ...process.env, DATA_DIR: lk.dataDir, DATABASE_URL: "", NATS_URL: "" } },
    );
    const limited = stdout.trim().split("\n").at(-1)!;
    expect(limited).toMatch(/^lk_root_/);
    const refused = await post("apis.createApi", { name: "not allowed" }, limited);
    expect(refused.status).toBe(403);

    const { context, page } = await open(1280);
    try {
      await signIn(page, limited);
      await page.getByLabel("Name", { exact: true }).fill("not allowed");
      await page.getByRole("button", { name: "Create API" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toContain("Refused: this root key lacks a permission");
      expect(await alert.textContent()).toContain(refused.body.error.detail);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("works 390 pixels wide: every page fits and has no serious accessibility violation", async () => {
    const { context, page } = await open(390, 844);
    try {
      await page.goto("/");
      expect(await fitsWidth(page)).toBe(true);
      await signIn(page);
      const apiId = (await post("apis.createApi", { name: "mobile" })).body.data.apiId;
      const made = (
        await post("keys.createKey", {
          apiId,
          name: "phone key",
          credits: { remaining: 3 },
          recoverable: true,
        })
      ).body.data;
      const pages: [string, string][] = [
        ["#/apis", "APIs"],
        [`#/apis/${apiId}`, "mobile"],
        [`#/apis/${apiId}/new-key`, "Create a key"],
        [`#/apis/${apiId}/keys/${made.keyId}`, "phone key"],
        ["#/identities", "Identities"],
        ["#/permissions", "Permissions and roles"],
        ["#/ratelimits", "Rate limits"],
        ["#/ratelimits/api.requests", "api.requests"],
        ["#/analytics", "Analytics"],
        ["#/policies", "Forward-auth policies"],
      ];
      for (const [hash, heading] of pages) {
        await page.goto(`/${hash}`);
        await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
        await settled(page);
        expect(await fitsWidth(page), hash).toBe(true);
        expect(await seriousViolations(page), hash).toEqual([]);
        if (heading === "phone key") await screenshot(page, "key-390");
      }
      // A recoverable key is shown again, on its page, to a root key holding decrypt_key.
      await page.goto(`/#/apis/${apiId}/keys/${made.keyId}`);
      const recover = page.getByRole("region", { name: "Recover" });
      await recover.getByRole("button", { name: "Show the key" }).click();
      await expect.poll(() => recover.getByLabel("The key").inputValue(), SLOW).toBe(made.key);
      // The check itself finds what it should: an image without a text alternative is critical.
      await page.evaluate('document.querySelector("main").append(document.createElement("img"))');
      expect(await seriousViolations(page)).toEqual([expect.stringMatching(/^critical image-alt/)]);
    } finally {
      await context.close();
    }
  });
});

/** Whether Latchkey serves `operation` at all: the gateway answers an unknown path with this 404. */
async function served(operation: string): Promise<boolean> {
  const res = await post(operation, {});
  return !(res.status === 404 && String(res.body.error?.detail).startsWith("No operation is served at"));
}

/** The id of the root key `npm start` printed, as the CLI lists it. */
async function rootKeyId(): Promise<string> {
  const { stdout } = await run(
    join(root, "node_modules/.bin/tsx"),
    [join(root, "apps/latchkey/src/cli.ts"), "root-key", "list"],
    { env: { ...process.env, DATA_DIR: lk.dataDir, DATABASE_URL: "", NATS_URL: "" } },
  );
  const line = stdout
    .split("\n")
    .map((l) => l.split("\t"))
    .find((cols) => cols[2] !== undefined && lk.rootKey.startsWith(cols[2].replace(/…$/, "")));
  if (!line) throw new Error(`the root key is not in the CLI's list:\n${stdout}`);
  return line[0]!;
}

describe("the audit log and webhooks pages", { timeout: 180_000 }, () => {
  it("offers exactly the event types Latchkey publishes", () => {
    expect(EVENT_TYPES.map((t) => t.type)).toEqual([...DOMAIN_EVENT_TYPES]);
  });

  it("shows the record of a key created through the console, and narrows by operation", async (ctx) => {
    if (!(await served("auditLogs.list")))
      ctx.skip("auditLogs.list is not served by this Latchkey yet (404 for its route)");
    const { context, page } = await open(1280);
    const seen = watch(context, lk.origin);
    try {
      await signIn(page);
      const apiId = (await post("apis.createApi", { name: "audited" })).body.data.apiId;
      await page.goto(`/#/apis/${apiId}/new-key`);
      await page.getByRole("heading", { name: "Create a key" }).waitFor();
      await page.getByLabel("Name", { exact: true }).fill("audited key");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByText("This is the only time the key is shown").waitFor();
      const listed = await post("apis.listKeys", { apiId });
      expect(listed.body.data.length).toBe(1);
      const keyId: string = listed.body.data[0].keyId;

      const records = await post("auditLogs.list", { resourceId: keyId });
      expect(records.status).toBe(200);
      expect(records.body.data.length).toBe(1);
      const record = records.body.data[0];
      const actorId = await rootKeyId();
      expect(record).toMatchObject({
        actor: { type: "root_key", id: actorId },
        operation: "keys.createKey",
        outcome: "success",
      });
      expect(record.resources).toEqual(
        expect.arrayContaining([
          { type: "api", id: apiId },
          { type: "key", id: keyId },
        ]),
      );
      expect(record.requestId).toMatch(/^req_/);

      await page.getByRole("link", { name: "Audit log", exact: true }).click();
      await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
      await settled(page);
      const table = page.getByRole("region", { name: "Audit log" });
      const row = table.locator("tbody tr", { hasText: keyId });
      await row.waitFor();
      const cells = await row.locator("td").allTextContents();
      expect(cells[1]).toBe(`root key ${actorId}`);
      expect(cells[2]).toBe("keys.createKey");
      expect(cells[4]).toBe("success");
      expect(cells[5]).toBe(record.requestId);
      expect(cells[6]).toBe(record.fields.length > 0 ? record.fields.join(", ") : "—");
      expect(await row.getByRole("link", { name: keyId }).getAttribute("href")).toBe(
        `#/apis/${apiId}/keys/${keyId}`,
      );
      expect(await row.getByRole("link", { name: apiId }).getAttribute("href")).toBe(`#/apis/${apiId}`);
      expect(await seriousViolations(page)).toEqual([]);

      // Newest first, as many rows as the API lists; then only keys.createKey, fewer of them.
      const all = (await post("auditLogs.list", { limit: 50 })).body.data;
      const created = (await post("auditLogs.list", { limit: 50, operation: "keys.createKey" })).body.data;
      expect(created.length).toBeGreaterThan(0);
      expect(created.length).toBeLessThan(all.length);
      expect(await table.locator("tbody tr").count()).toBe(all.length);
      expect(await table.locator("tbody tr td:nth-child(3)").allTextContents()).toEqual(
        all.map((r: { operation: string }) => r.operation),
      );
      await page.getByLabel("Operation").fill("keys.createKey");
      await page.getByRole("button", { name: "Filter" }).click();
      await expect.poll(() => table.locator("tbody tr").count(), SLOW).toBe(created.length);
      expect(await table.locator("tbody tr td:nth-child(3)").allTextContents()).toEqual(
        created.map(() => "keys.createKey"),
      );
      await screenshot(page, "audit-log");

      // The key's link opens its page; the key's page links to its records.
      await table.locator("tbody tr", { hasText: keyId }).getByRole("link", { name: keyId }).click();
      await page.getByRole("heading", { name: "audited key", level: 1 }).waitFor();
      await page.getByRole("link", { name: "Its audit log" }).click();
      await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
      expect(await page.getByLabel("Resource id").inputValue()).toBe(keyId);
      await expect.poll(() => table.locator("tbody tr").count(), SLOW).toBe(1);
      // #/keys/<id>, where a record names a key without its API, finds the API in the key's records.
      await page.goto(`/#/keys/${keyId}`);
      await page.getByRole("heading", { name: "audited key", level: 1 }).waitFor();
      expect(new URL(page.url()).hash).toBe(`#/apis/${apiId}/keys/${keyId}`);

      // A refused change is a failure, with its code.
      const refused = await post("keys.createKey", { apiId: "api_1111111111111111" });
      expect(refused.status).toBe(404);
      const failures = (await post("auditLogs.list", { outcome: "failure" })).body.data;
      expect(failures[0]).toMatchObject({
        operation: "keys.createKey",
        outcome: "failure",
        error: { code: "API_NOT_FOUND" },
        resources: [{ type: "api", id: "api_1111111111111111" }],
      });
      await page.goto("/#/audit?outcome=failure");
      await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
      expect(await page.getByLabel("Outcome").inputValue()).toBe("failure");
      await expect.poll(() => table.locator("tbody tr").count(), SLOW).toBe(failures.length);
      expect(await table.locator("tbody tr td:nth-child(5)").allTextContents()).toEqual(
        failures.map((r: { error: { code: string } | null }) =>
          r.error ? `failure: ${r.error.code}` : "failure",
        ),
      );

      expect(seen.outside).toEqual([]);
      expect(seen.cspViolations).toEqual([]);
      expect(seen.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("creates a webhook (its secret shown once), lists its deliveries, redelivers, disables, enables and deletes it", async (ctx) => {
    if (!(await served("webhooks.list")))
      ctx.skip("webhooks.list is not served by this Latchkey yet (404 for its route)");
    // A receiver that, at /hooks, fails the first delivery attempt (500) and takes every later one (204),
    // and at /broken fails every one.
    const received: IncomingHttpHeaders[] = [];
    const receiver: Server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        if (req.url === "/broken") return res.writeHead(500).end();
        received.push(req.headers);
        res.writeHead(received.length === 1 ? 500 : 204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
    const { context, page } = await open(1280);
    const seen = watch(context, lk.origin);
    try {
      await signIn(page);
      await page.getByRole("link", { name: "Webhooks", exact: true }).click();
      await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor();
      await page.getByText("No webhooks yet").waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      await page.getByLabel("URL").fill(hookUrl);
      await page.getByLabel("Description").fill("billing");
      await page.getByLabel("key.created").check();
      await page.getByRole("button", { name: "Create webhook" }).click();
      await page.getByText("This is the only time the secret is shown").waitFor();
      const secret = await page.getByTestId("webhook-secret").inputValue();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      await page.getByRole("button", { name: "Copy secret" }).click();
      await page.getByText("Copied").waitFor();
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);
      expect(await seriousViolations(page)).toEqual([]);

      // Listed, by the API and on the page; never with its secret.
      const list = await post("webhooks.list", {});
      expect(list.body.data.length).toBe(1);
      const webhookId: string = list.body.data[0].webhookId;
      expect(list.body.data[0]).toMatchObject({
        url: hookUrl,
        events: ["key.created"],
        description: "billing",
        enabled: true,
      });
      expect(JSON.stringify(list.body)).not.toContain(secret);
      const rows = page.getByRole("region", { name: "Webhooks" }).locator("tbody tr");
      await expect.poll(() => rows.count(), SLOW).toBe(1);
      expect(await rows.locator("td").allTextContents()).toEqual([
        `${hookUrl}billing`,
        "key.created",
        "enabled",
        expect.any(String),
      ]);
      await screenshot(page, "webhooks");

      // A second webhook, at an address that always fails: Latchkey disables it after its three attempts.
      const broken = await post("webhooks.create", {
        url: hookUrl.replace("/hooks", "/broken"),
        events: ["key.created"],
      });
      expect(broken.status).toBe(200);
      const brokenId: string = broken.body.data.webhookId;

      // A key created is delivered: the first attempt fails (500), the retry succeeds.
      await post("keys.createKey", {
        apiId: (await post("apis.createApi", { name: "hooked" })).body.data.apiId,
      });
      await page.getByRole("link", { name: hookUrl }).click();
      await page.getByRole("heading", { name: hookUrl, level: 1 }).waitFor();
      expect(await page.content()).not.toContain(secret);
      const deliveries = page.getByRole("region", { name: "Deliveries" }).locator("tbody tr");
      // The deliveries' statuses, read again (Refresh) each time.
      const statuses = async () => {
        await page.getByRole("button", { name: "Refresh" }).click();
        await settled(page);
        return deliveries.locator("td:nth-child(2)").allTextContents();
      };
      await expect
        .poll(statuses, { timeout: 30_000, interval: 500 })
        .toEqual([expect.stringMatching(/^delivered/)]);
      expect(received.length).toBe(2);
      expect(received[1]!["webhook-id"]).toBe(received[0]!["webhook-id"]);
      const api = (await post("webhooks.listDeliveries", { webhookId })).body.data;
      expect(api.length).toBe(1);
      expect(api[0].status).toBe("delivered");
      expect(api[0].attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 204]);
      // Each attempt as the API answered it: status code, latency, and its error where it has one.
      const attempts = await deliveries.locator("td:nth-child(4) li").allTextContents();
      expect(attempts.map((text) => text.split(" · ")[0])).toEqual(
        api[0].attempts.map(
          (a: { statusCode: number; latencyMs: number; error?: string | null }) =>
            `${a.statusCode} in ${a.latencyMs} ms${a.error ? `: ${a.error}` : ""}`,
        ),
      );
      expect(await deliveries.locator("td:first-child").textContent()).toBe(`key.created${api[0].eventId}`);
      expect(await seriousViolations(page)).toEqual([]);

      // Redelivered: a new delivery of the same event, taken at its first attempt.
      await page.getByRole("button", { name: `Redeliver key.created ${api[0].eventId}` }).click();
      await page.getByText(`Event ${api[0].eventId} is delivered again as`).waitFor();
      await expect
        .poll(statuses, { timeout: 30_000, interval: 500 })
        .toEqual([expect.stringMatching(/^delivered/), expect.stringMatching(/^delivered/)]);
      expect(received.length).toBe(3);
      await screenshot(page, "webhook");

      // The broken webhook, once disabled, says so with Latchkey's reason, in the list and on its page.
      await expect
        .poll(
          async () =>
            (await post("webhooks.list", {})).body.data.find(
              (w: { webhookId: string }) => w.webhookId === brokenId,
            ),
          SLOW,
        )
        .toMatchObject({ enabled: false, disabledReason: expect.any(String) });
      const reason: string = (await post("webhooks.list", {})).body.data.find(
        (w: { webhookId: string }) => w.webhookId === brokenId,
      ).disabledReason;
      await page
        .getByRole("navigation", { name: "Sections" })
        .getByRole("link", { name: "Webhooks" })
        .click();
      const brokenRow = page
        .getByRole("region", { name: "Webhooks" })
        .locator("tbody tr", { hasText: "/broken" });
      expect(await brokenRow.locator("td").nth(2).textContent()).toBe(`disabled: ${reason}`);
      await brokenRow.getByRole("link").click();
      await expect
        .poll(() => page.getByTestId("disabled-reason").textContent(), SLOW)
        .toBe(`This webhook is disabled: nothing is delivered to it.Reason: ${reason}`);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, "webhook-disabled");
      // Its audit log: created by the root key, disabled by Latchkey itself (actor system).
      const brokenLog = (await post("auditLogs.list", { resourceId: brokenId })).body.data;
      expect(
        brokenLog.map((r: { operation: string; actor: { type: string } }) => [r.operation, r.actor.type]),
      ).toEqual([
        ["webhooks.disable", "system"],
        ["webhooks.create", "root_key"],
      ]);
      await page.getByRole("link", { name: "Its audit log" }).click();
      await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
      const logRows = page.getByRole("region", { name: "Audit log" }).locator("tbody tr");
      await expect.poll(() => logRows.count(), SLOW).toBe(2);
      expect(await logRows.nth(0).locator("td").nth(1).textContent()).toBe("Latchkey itself");
      expect(await logRows.nth(0).locator("td").nth(2).textContent()).toBe("webhooks.disable");
      expect(await logRows.nth(0).locator("td").nth(5).textContent()).toBe("—");
      expect(await logRows.nth(0).getByRole("link", { name: brokenId }).getAttribute("href")).toBe(
        `#/webhooks/${brokenId}`,
      );
      expect(await logRows.nth(1).locator("td").nth(2).textContent()).toBe("webhooks.create");

      // 390 pixels wide, the webhooks' pages fit and pass axe.
      const narrow = await open(390, 844);
      try {
        await signIn(narrow.page);
        for (const hash of ["#/webhooks", `#/webhooks/${webhookId}`, `#/webhooks/${brokenId}`, "#/audit"]) {
          await narrow.page.goto(`/${hash}`);
          await narrow.page.getByRole("heading", { level: 1 }).first().waitFor();
          await settled(narrow.page);
          expect(await fitsWidth(narrow.page), hash).toBe(true);
          expect(await seriousViolations(narrow.page), hash).toEqual([]);
        }
      } finally {
        await narrow.context.close();
      }

      expect((await post("webhooks.delete", { webhookId: brokenId })).status).toBe(200);
      await page.goto(`/#/webhooks/${webhookId}`);
      await page.getByRole("heading", { name: hookUrl, level: 1 }).waitFor();

      // Disabled, then enabled again.
      await page.getByRole("button", { name: "Disable webhook" }).click();
      await expect.poll(() => page.getByTestId("webhook-state").textContent(), SLOW).toBe("disabled");
      await page.getByTestId("disabled-reason").waitFor();
      expect((await post("webhooks.list", {})).body.data[0].enabled).toBe(false);
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole("button", { name: "Enable webhook" }).click();
      await expect.poll(() => page.getByTestId("webhook-state").textContent(), SLOW).toBe("enabled");
      expect((await post("webhooks.list", {})).body.data[0].enabled).toBe(true);

      // Deleted, after a dialog naming it.
      await page.getByRole("button", { name: "Delete webhook" }).click();
      const dialog = page.getByRole("dialog", { name: "Delete this webhook?" });
      await dialog.waitFor();
      expect(await dialog.textContent()).toContain(hookUrl);
      expect(await seriousViolations(page)).toEqual([]);
      await dialog.getByRole("button", { name: "Delete webhook" }).click();
      await page.getByText("No webhooks yet").waitFor();
      expect((await post("webhooks.list", {})).body.data).toEqual([]);

      expect(seen.outside).toEqual([]);
      expect(seen.cspViolations).toEqual([]);
      expect(seen.errors).toEqual([]);
    } finally {
      await context.close();
      await new Promise((r) => receiver.close(r));
    }
  });

  it("shows the API's 403 message on both pages to a root key without audit.*.read or webhook.*.read", async () => {
    const { stdout } = await run(
      join(root, "node_modules/.bin/tsx"),
      [join(root, "apps/latchkey/src/cli.ts"), "root-key", "create", "--permissions", "api.*.read_api"],
      { env: { ...process.env, DATA_DIR: lk.dataDir, DATABASE_URL: "", NATS_URL: "" } },
    );
    const limited = stdout.trim().split("\n").at(-1)!;
    const { context, page } = await open(1280);
    try {
      await signIn(page, limited);
      for (const [hash, operation] of [
        ["#/audit", "auditLogs.list"],
        ["#/webhooks", "webhooks.list"],
      ] as const) {
        const refused = await post(operation, {}, limited);
        await page.goto(`/${hash}`);
        const alert = page.getByRole("alert");
        await alert.waitFor();
        if (refused.status === 404) {
          // Not served yet: the page shows the gateway's 404 as written, which is no blank page either.
          expect(await alert.textContent()).toContain(refused.body.error.detail);
          continue;
        }
        expect(refused.status).toBe(403);
        expect(await alert.textContent()).toContain("Refused: this root key lacks a permission");
        expect(await alert.textContent()).toContain(refused.body.error.detail);
        expect(await seriousViolations(page), hash).toEqual([]);
      }
    } finally {
      await context.close();
    }
  });
});
