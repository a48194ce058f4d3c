import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, startProcess } from "../../test/testing/process-stack.ts";
import { ensureBuilt } from "../server/build.ts";
import { launch, printedRootKey, seriousViolations, watch } from "./browser.ts";

// The portal as an end user meets it: a backend (this test, with a root key) makes a portal and a session
// for one of its users, and Debian's Chromium opens the session's URL on the Latchkey that `npm start`
// serves (embedded storage). What the page did is checked through the API. The end user reaches Latchkey
// as a deployment's users do, through a proxy that serves it under a path (PUBLIC_URL=<proxy>/keys).

const root = join(import.meta.dirname, "..", "..");
const dataDir = mkdtempSync(join(tmpdir(), "latchkey-portal-"));
const SLOW = { timeout: 30_000, interval: 200 };
/** CONSOLE_SCREENSHOTS=docs/images writes portal.png, portal-mobile.png and portals.png there. */
const shots = process.env["CONSOLE_SCREENSHOTS"];
const LOGO = "https://logo.example/acme.svg";
const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40"><rect width="40" height="40" rx="8" fill="#b45309"/><text x="48" y="27" font-family="sans-serif" font-size="20" font-weight="700" fill="#111827">Acme</text></svg>';
const ALL_SCOPES = ["keys:read", "keys:create", "keys:reroll", "analytics:read"];

let latchkey: Proc;
let browser: Browser;
let rootKey: string;
let origin: string;
let proxy: Server;
/** The proxy's origin, and PUBLIC_URL: the proxy serves Latchkey under /keys. */
let portalOrigin: string;
let publicUrl: string;
let apiId: string;
let portalId: string;
/** Alice's keys (the session's user) and Bob's (another identity in the same API). */
const alice: { keyId: string; key: string }[] = [];
let bob: { keyId: string; key: string };

async function post(operation: string, body: unknown, key = rootKey) {
  const res = await fetch(`${origin}/v2/${operation}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function session(body: Record<string, unknown>): Promise<string> {
  const made = await post("portal.createSession", { portal: "acme", externalId: "user_alice", ...body });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  expect(made.body.data.url).toMatch(new RegExp(`^${publicUrl.replace(/[.]/g, "\\.")}/portal/\\?code=`));
  return made.body.data.url;
}

/** A browser context where the portal's logo (an https URL Latchkey never serves) is answered by the test. */
async function open(width: number, height = 900): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height }, baseURL: origin });
  for (const o of [origin, portalOrigin]) {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: o });
  }
  await context.route(LOGO, (route) =>
    route.fulfill({ status: 200, contentType: "image/svg+xml", body: LOGO_SVG }),
  );
  return { context, page: await context.newPage() };
}

async function screenshot(page: Page, name: string) {
  if (shots) await page.screenshot({ path: join(resolve(root, shots), `${name}.png`), fullPage: true });
}

/** portal.<operation> from the page itself: same origin, with its cookie, as its own code calls. */
async function fromPage(
  page: Page,
  operation: string,
  body: unknown,
): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ([op, b]) => {
      const res = await fetch(`../v2/portal.${op}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(b),
      });
      return { status: res.status, body: await res.json() };
    },
    [operation, body] as const,
  );
}

const shownKeyIds = (page: Page) =>
  page.getByTestId("key").evaluateAll((cards) => cards.map((c) => c.getAttribute("data-key-id")!).sort());

async function fitsWidth(page: Page) {
  return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth");
}

beforeAll(async () => {
  await ensureBuilt();
  // The proxy strips /keys and passes the rest on, headers and all, as a deployment's would.
  proxy = createServer((req, res) => {
    if (!req.url?.startsWith("/keys/")) return void res.writeHead(404).end();
    const { port } = new URL(latchkey.url);
    const upstream = request(
      {
        host: "127.0.0.1",
        port,
        method: req.method,
        path: req.url.slice("/keys".length),
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((done) => proxy.listen(0, "127.0.0.1", done));
  portalOrigin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  publicUrl = `${portalOrigin}/keys`;
  latchkey = await startProcess("latchkey", "apps/latchkey/src/start.ts", {
    PUBLIC_URL: publicUrl,
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    NATS_URL: "",
    METRICS_PORT: "0",
  });
  rootKey = await printedRootKey(latchkey);
  origin = latchkey.url;
  browser = await launch();
  if (shots) mkdirSync(resolve(root, shots), { recursive: true });

  apiId = (await post("apis.createApi", { name: "acme-public" })).body.data.apiId;
  for (const [externalId, name, ratelimits] of [
    ["user_alice", "Production", [{ name: "requests", limit: 2, duration: 60_000, autoApply: true }]],
    ["user_alice", "Staging", []],
    ["user_bob", "Bob's key", []],
  ] as const) {
    const made = await post("keys.createKey", { apiId, prefix: "acme", externalId, name, ratelimits });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    (externalId === "user_alice" ? alice : []).push(made.body.data);
    if (externalId === "user_bob") bob = made.body.data;
  }
  // Production is used three times: two pass, the third meets its limit. Bob's key is used once.
  const codes = [];
  for (let i = 0; i < 3; i++)
    codes.push((await post("keys.verifyKey", { key: alice[0]!.key })).body.data.code);
  expect(codes).toEqual(["VALID", "VALID", "RATE_LIMITED"]);
  expect((await post("keys.verifyKey", { key: bob.key })).body.data.code).toBe("VALID");
  // Analytics are written shortly after a verification.
  const end = Math.ceil((Date.now() + 3_600_000) / 3_600_000) * 3_600_000;
  // expect.poll works in tests only: a loop of its own here.
  const counted = async () => {
    const { body } = await post("analytics.getVerifications", {
      start: end - 86_400_000,
      end,
      granularity: "hour",
      apiId,
    });
    return (body.data as { total: number }[]).reduce((n, b) => n + b.total, 0);
  };
  const until = Date.now() + SLOW.timeout;
  while ((await counted()) !== 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  expect(await counted()).toBe(4);

  const made = await post("portals.createPortal", {
    apiId,
    name: "Acme customers",
    slug: "acme",
    branding: { title: "Acme API keys", accentColor: "#b45309", logoUrl: LOGO },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  portalId = made.body.data.portalId;
});

afterAll(async () => {
  await browser?.close();
  await latchkey?.stop();
  proxy?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("the portal web app", { timeout: 180_000 }, () => {
  it("is served at /portal/ under its Content-Security-Policy, its assets hashed and long-lived", async () => {
    const index = await fetch(`${origin}/portal/?code=anything`);
    expect(index.status).toBe(200);
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expect(index.headers.get("content-security-policy")).toContain("img-src 'self' data: https:;");
    expect(index.headers.get("content-security-policy")).toContain("script-src 'self';");
    expect(index.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await index.text();
    // Named relative to the page, so that a proxy may serve Latchkey under a path.
    const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${origin}/portal/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(html).not.toMatch(/<script>|<style>| style="/);
    // Through the proxy, under its path, the same names find the same files.
    expect((await fetch(`${publicUrl}/portal/${script}`)).status).toBe(200);
  });

  it("shows exactly the session's user's keys with their usage, rerolls one (shown once), creates one", async () => {
    const url = await session({ scopes: ALL_SCOPES, returnUrl: "https://app.example/settings" });
    const { context, page } = await open(1280);
    const seen = watch(context, portalOrigin);
    try {
      await page.goto(url);
      await page.getByRole("heading", { name: "Your API keys", level: 1, exact: true }).waitFor(SLOW);
      // The code is gone from the address bar and the history; the cookie is HttpOnly.
      expect(page.url()).toBe(`${publicUrl}/portal/`);
      expect(await page.evaluate("document.cookie")).toBe("");
      const cookies = await context.cookies(portalOrigin);
      expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([
        ["portal_session", true, "Strict"],
      ]);

      expect(await page.getByTestId("portal-title").textContent()).toBe("Acme API keys");
      expect(await page.title()).toBe("Acme API keys: API keys");
      await expect
        .poll(
          () =>
            page.locator("img.logo").evaluate((i) => (i as unknown as { naturalWidth: number }).naturalWidth),
          SLOW,
        )
        .toBe(120);
      expect(await page.getByTestId("return-link").getAttribute("href")).toBe("https://app.example/settings");
      expect(await page.getByTestId("preview").count()).toBe(0);

      await expect.poll(() => shownKeyIds(page), SLOW).toEqual(alice.map((k) => k.keyId).sort());
      const production = page.locator(`[data-key-id="${alice[0]!.keyId}"]`);
      const staging = page.locator(`[data-key-id="${alice[1]!.keyId}"]`);
      await expect
        .poll(() => production.getByTestId("usage-summary").textContent(), SLOW)
        .toBe("3 verifications: 2 valid, 1 rate limited.");
      await expect
        .poll(() => staging.getByTestId("usage-summary").textContent(), SLOW)
        .toBe("No verifications in this range.");
      expect(await page.getByText("Bob's key").count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, "portal");

      // Reroll Production, its old key stopping at once: the new key is shown once, with a copy button.
      await page.getByRole("button", { name: "Reroll Production" }).click();
      const dialog = page.getByRole("dialog");
      await dialog.getByLabel("The current key stops working").selectOption("0");
      expect(await seriousViolations(page)).toEqual([]);
      await dialog.getByRole("button", { name: "Reroll" }).click();
      await page.getByRole("heading", { name: "The new key for Production" }).waitFor(SLOW);
      const rerolled = await page.getByTestId("new-key").inputValue();
      expect(rerolled).toMatch(/^acme_/);
      await page.getByRole("button", { name: "Copy key" }).click();
      await page.getByText("Copied", { exact: true }).waitFor();
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(rerolled);
      expect((await post("keys.verifyKey", { key: rerolled })).body.data).toMatchObject({
        valid: true,
        code: "VALID",
      });
      expect((await post("keys.verifyKey", { key: alice[0]!.key })).body.data.valid).toBe(false);
      const rerolledId = (await post("keys.verifyKey", { key: rerolled })).body.data.keyId as string;
      // The list now holds the new key; the old one, if still listed, is expired.
      await expect.poll(async () => (await shownKeyIds(page)).includes(rerolledId), SLOW).toBe(true);
      for (const id of await shownKeyIds(page)) {
        if (id === alice[0]!.keyId) {
          expect(await page.locator(`[data-key-id="${id}"]`).getByTestId("key-status").textContent()).toBe(
            "expired",
          );
        }
      }

      // Create a key: shown once, Alice's, in the portal's API.
      await page.getByLabel("Name", { exact: true }).fill("CI");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByRole("heading", { name: "Your new key" }).waitFor(SLOW);
      const created = await page.getByTestId("new-key").inputValue();
      const verified = (await post("keys.verifyKey", { key: created })).body.data;
      expect(verified).toMatchObject({ valid: true, name: "CI", identity: { externalId: "user_alice" } });
      await expect.poll(async () => (await shownKeyIds(page)).includes(verified.keyId), SLOW).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);

      // Bob's key is another user's: it answers as a missing one does, and is not touched.
      const missing = await fromPage(page, "rerollKey", { keyId: "key_doesnotexist0000", expiration: 0 });
      const bobs = await fromPage(page, "rerollKey", { keyId: bob.keyId, expiration: 0 });
      expect(missing.status).toBe(404);
      expect([bobs.status, bobs.body.error.type]).toEqual([404, missing.body.error.type]);
      expect((await post("keys.verifyKey", { key: bob.key })).body.data.valid).toBe(true);

      // A reload shows the session again, and no key in full.
      await page.reload();
      await page.getByRole("heading", { name: "Your API keys", level: 1, exact: true }).waitFor(SLOW);
      await expect.poll(async () => (await shownKeyIds(page)).includes(verified.keyId), SLOW).toBe(true);
      expect(await page.getByTestId("new-key").count()).toBe(0);
      expect(await page.content()).not.toContain(created);
      expect(await page.content()).not.toContain(rerolled);

      // Sign out: the session ends, the page says so with the return link, and the cookie no longer answers.
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("heading", { name: "You signed out" }).waitFor(SLOW);
      expect(await page.getByRole("link", { name: "Return to the app" }).getAttribute("href")).toBe(
        "https://app.example/settings",
      );
      expect((await fromPage(page, "listKeys", {})).status).toBe(401);
      await page.reload();
      await page.getByRole("heading", { name: "No session" }).waitFor(SLOW);
      expect(await seriousViolations(page)).toEqual([]);

      // The link's code was single-use: opened again, it is refused, and no session is shown.
      await page.goto(url);
      await page.getByRole("heading", { name: "This link cannot be used again" }).waitFor(SLOW);
      expect(page.url()).toBe(`${publicUrl}/portal/`);
      expect([...new Set(seen.outside)]).toEqual([LOGO]);
      expect(seen.cspViolations).toEqual([]);
      expect(seen.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("shows no reroll or create without their scopes, and the API refuses them with 403", async () => {
    const url = await session({ scopes: ["keys:read"] });
    const { context, page } = await open(1280);
    try {
      await page.goto(url);
      await page.getByRole("heading", { name: "Your API keys", level: 1, exact: true }).waitFor(SLOW);
      await expect.poll(async () => (await shownKeyIds(page)).length, SLOW).toBeGreaterThan(0);
      expect(await page.getByRole("button", { name: /^Reroll/ }).count()).toBe(0);
      expect(await page.getByRole("heading", { name: "Create a key" }).count()).toBe(0);
      expect(await page.getByTestId("usage-summary").count()).toBe(0);
      expect(await page.getByTestId("return-link").count()).toBe(0);
      const keyId = (await shownKeyIds(page))[0]!;
      const reroll = await fromPage(page, "rerollKey", { keyId, expiration: 0 });
      expect([reroll.status, reroll.body.error?.status]).toEqual([403, 403]);
      expect((await fromPage(page, "createKey", { name: "x" })).status).toBe(403);
      const window = { startTime: Date.now() - 3_600_000, endTime: Date.now() };
      expect((await fromPage(page, "getVerifications", window)).status).toBe(403);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("works 390 pixels wide, marks a preview, and keeps a hostile title as text", async () => {
    // A title written to inject markup: the page shows it as text and runs nothing.
    const hostile = '<img src=x onerror="window.pwned=1">Acme';
    const updated = await post("portals.updatePortal", {
      portalId,
      branding: { title: hostile, accentColor: "#b45309", logoUrl: LOGO },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    const url = await session({
      scopes: ALL_SCOPES,
      preview: true,
      returnUrl: "https://app.example/settings",
    });
    const { context, page } = await open(390, 844);
    const seen = watch(context, portalOrigin);
    try {
      await page.goto(url);
      await page.getByRole("heading", { name: "Your API keys", level: 1, exact: true }).waitFor(SLOW);
      expect(await page.getByTestId("portal-title").textContent()).toBe(hostile);
      expect(await page.evaluate("window.pwned")).toBeUndefined();
      expect(await page.locator("header img").count()).toBe(1);
      expect(await page.getByTestId("preview").textContent()).toContain("user_alice");
      await expect.poll(async () => (await shownKeyIds(page)).length, SLOW).toBeGreaterThanOrEqual(3);
      await expect.poll(() => page.getByText("Loading").count(), SLOW).toBe(0);
      expect(await fitsWidth(page)).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
      // Keyboard: Tab reaches the return link, Sign out, then the range picker.
      await page.keyboard.press("Tab");
      expect(await page.evaluate("document.activeElement.textContent")).toBe("Return to the app");
      await page.keyboard.press("Tab");
      expect(await page.evaluate("document.activeElement.textContent")).toBe("Sign out");
      await page.keyboard.press("Tab");
      expect(await page.evaluate("document.activeElement.tagName")).toBe("SELECT");
      // The reroll dialog opens from the keyboard, takes the focus, and Escape leaves it with nothing rerolled.
      const before = await shownKeyIds(page);
      await page
        .getByRole("button", { name: /^Reroll/ })
        .first()
        .focus();
      await page.keyboard.press("Enter");
      await page.getByRole("dialog").waitFor(SLOW);
      expect(await page.evaluate("document.activeElement.closest('dialog') !== null")).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
      await page.keyboard.press("Escape");
      await page.getByRole("dialog").waitFor({ state: "hidden", ...SLOW });
      expect(await page.getByTestId("new-key").count()).toBe(0);
      expect(await shownKeyIds(page)).toEqual(before);
      expect(seen.cspViolations).toEqual([]);
      expect(seen.errors).toEqual([]);
    } finally {
      await context.close();
    }
    await post("portals.updatePortal", {
      portalId,
      branding: { title: "Acme API keys", accentColor: "#b45309", logoUrl: LOGO },
    });
    // The phone screenshot, with the portal's own title again.
    const again = await session({ scopes: ALL_SCOPES, returnUrl: "https://app.example/settings" });
    const phone = await open(390, 844);
    try {
      await phone.page.goto(again);
      await expect.poll(async () => (await shownKeyIds(phone.page)).length, SLOW).toBeGreaterThanOrEqual(3);
      await expect.poll(() => phone.page.getByText("Loading").count(), SLOW).toBe(0);
      await screenshot(phone.page, "portal-mobile");
    } finally {
      await phone.context.close();
    }
  });
});

describe("the console's portal pages", { timeout: 180_000 }, () => {
  it("lists, creates, edits, previews and deletes a portal", async () => {
    const { context, page } = await open(1280);
    const seen = watch(context, origin);
    try {
      await page.goto("/");
      await page.getByLabel("Root key").fill(rootKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Portals" }).click();
      await page.getByRole("link", { name: "Acme customers" }).waitFor(SLOW);
      expect(await seriousViolations(page)).toEqual([]);

      await page.getByLabel("API id").fill(apiId);
      await page.getByLabel("Name", { exact: true }).fill("Partners");
      await page.getByLabel("Slug").fill("partners");
      await page.getByLabel("Title").fill("Partner keys");
      await page.getByLabel("Accent colour").fill("#0f766e");
      await page.getByLabel("Sessions last (minutes)").fill("30");
      await page.getByRole("button", { name: "Create portal" }).click();
      await page.getByRole("heading", { name: "Partners", level: 1 }).waitFor(SLOW);
      const id = decodeURIComponent(new URL(page.url()).hash.split("/")[2]!);
      expect((await post("portals.getPortal", { portalId: id })).body.data).toMatchObject({
        portalId: id,
        apiId,
        name: "Partners",
        slug: "partners",
        branding: { title: "Partner keys", accentColor: "#0f766e" },
        sessionTtlMs: 1_800_000,
      });
      expect(await page.getByText("30 minutes").count()).toBe(1);

      await page.getByLabel("Title").fill("Partner API keys");
      await page.getByLabel("Sessions last (minutes)").fill("120");
      await page.getByRole("button", { name: "Save portal" }).click();
      await page.getByText("2 hours").waitFor(SLOW);
      expect((await post("portals.getPortal", { portalId: id })).body.data).toMatchObject({
        branding: { title: "Partner API keys", accentColor: "#0f766e" },
        sessionTtlMs: 7_200_000,
      });
      expect(await seriousViolations(page)).toEqual([]);

      // A preview session for Alice opens in a new tab, marked as a preview, with her keys.
      await page.getByLabel("External id").fill("user_alice");
      const [tab] = await Promise.all([
        context.waitForEvent("page"),
        page.getByRole("button", { name: "Open preview" }).click(),
      ]);
      await tab.getByRole("heading", { name: "Your API keys", level: 1, exact: true }).waitFor(SLOW);
      expect(await tab.getByTestId("preview").count()).toBe(1);
      expect(await tab.getByTestId("portal-title").textContent()).toBe("Partner API keys");
      await expect.poll(async () => (await shownKeyIds(tab)).length, SLOW).toBeGreaterThanOrEqual(3);
      expect(await tab.evaluate("window.opener")).toBeNull();
      await tab.close();

      await page.getByRole("link", { name: "Portals", exact: true }).first().click();
      await page.getByRole("link", { name: "Partners" }).waitFor(SLOW);
      await screenshot(page, "portals");
      await page.getByRole("link", { name: "Partners" }).click();
      await page.getByRole("button", { name: "Delete portal" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Delete Partners" }).click();
      await page.getByRole("heading", { name: "Portals", level: 1 }).waitFor(SLOW);
      expect((await post("portals.getPortal", { portalId: id })).status).toBe(404);
      expect(seen.cspViolations).toEqual([]);
      expect(seen.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("works 390 pixels wide: the portals list and a portal's page fit and pass axe", async () => {
    const { context, page } = await open(390, 844);
    try {
      await page.goto("/");
      await page.getByLabel("Root key").fill(rootKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("navigation", { name: "Sections" }).waitFor(SLOW);
      for (const [hash, heading] of [
        ["#/portals", "Portals"],
        [`#/portals/${portalId}`, "Acme customers"],
      ] as const) {
        await page.goto(`/${hash}`);
        await page.getByRole("heading", { name: heading, level: 1, exact: true }).waitFor(SLOW);
        await expect.poll(() => page.getByText("Loading").count(), SLOW).toBe(0);
        expect(await fitsWidth(page), hash).toBe(true);
        expect(await seriousViolations(page), hash).toEqual([]);
      }
    } finally {
      await context.close();
    }
  });
});
