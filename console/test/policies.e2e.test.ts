import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { consoleUnderTest, seriousViolations } from "./browser.ts";

// The Policies page as a person uses it: Debian's Chromium driving the console `npm start` serves, the
// test checking through the API (forwardAuth.listPolicies) what each click did.

const root = join(import.meta.dirname, "..", "..");
/** CONSOLE_SCREENSHOTS=docs/images writes policies.png there: the list, and the form editing a policy. */
const shots = process.env["CONSOLE_SCREENSHOTS"];

const lk = consoleUnderTest("console-policies");
const { post } = lk;
const SLOW = { timeout: 30_000, interval: 200 };

/** The workspace's policies as the API lists them: [name, position, dryRun]. */
async function stored(): Promise<[string, number | undefined, boolean][]> {
  const { body } = await post("forwardAuth.listPolicies", {});
  return body.data.map((p: any) => [p.policy.name, p.position, p.policy.dryRun === true]);
}

/** The workspace's policies as the API lists them, each definition whole. */
async function definitions(): Promise<Record<string, unknown>[]> {
  return (await post("forwardAuth.listPolicies", {})).body.data.map((p: any) => p.policy);
}

/** Opens the form, fills the name, the API and path 1, lets `more` fill the rest, and creates it. */
async function createThroughPage(
  page: Page,
  policy: { name: string; apiId: string; path: string },
  more?: (form: ReturnType<Page["getByRole"]>) => Promise<void>,
) {
  await page.getByRole("button", { name: "Create a policy" }).click();
  const form = page.getByRole("form", { name: "Create a policy" });
  await form.getByLabel("Name", { exact: true }).fill(policy.name);
  await form.getByLabel("API", { exact: true }).fill(policy.apiId);
  await form.getByLabel("Path 1", { exact: true }).fill(policy.path);
  await more?.(form);
  await form.getByRole("button", { name: "Create policy" }).click();
  await page.getByRole("button", { name: "Create a policy" }).waitFor();
}

describe("the Policies page", { timeout: 180_000 }, () => {
  it("creates policies through the form (rows added and removed), lists them, refuses bad fields before sending and shows the API's refusal of an unknown API, edits, reorders, switches dry run and deletes, with no serious accessibility violation", async () => {
    const apiId = (await post("apis.createApi", { name: "edge" })).body.data.apiId;
    const context = await lk.browser.newContext({
      viewport: { width: 1280, height: 900 },
      baseURL: lk.origin,
    });
    const page = await context.newPage();
    try {
      await page.goto("/");
      await page.getByLabel("Root key").fill(lk.rootKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page
        .getByRole("navigation", { name: "Sections" })
        .getByRole("link", { name: "Policies" })
        .click();
      await page.getByRole("heading", { name: "Forward-auth policies", level: 1 }).waitFor();
      await page.getByText("No policies yet").waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Every kind of field: a second path row added then removed, a host, methods, a header key,
      // permissions, cost, a rate-limit row, tags, what the upstream is told, stripping.
      await createThroughPage(page, { name: "orders", apiId, path: "/orders/**" }, async (form) => {
        await form.getByRole("button", { name: "Add a path" }).click();
        await form.getByLabel("Path 2", { exact: true }).fill("/carts/**");
        await form.getByRole("button", { name: "Add a path" }).click();
        await form.getByLabel("Path 3", { exact: true }).fill("/gone/**");
        await form.getByRole("button", { name: "Remove path 3" }).click();
        await form.getByRole("button", { name: "Add a host" }).click();
        await form.getByLabel("Host 1", { exact: true }).fill("api.example.com");
        await form.getByRole("checkbox", { name: "GET" }).check();
        await form.getByRole("checkbox", { name: "POST" }).check();
        await form.getByLabel("Key from").selectOption("header");
        await form.getByLabel("Key name", { exact: true }).fill("X-API-Key");
        await form.getByLabel("Permissions", { exact: true }).fill("orders.read OR orders.*");
        await form.getByLabel("Cost", { exact: true }).fill("2");
        await form.getByRole("button", { name: "Add a rate limit" }).click();
        await form.getByRole("button", { name: "Add a rate limit" }).click();
        await form.getByLabel("Name of rate limit 2").fill("burst");
        await form.getByRole("button", { name: "Remove rate limit 1" }).click();
        await form.getByLabel("Limit of rate limit 1").fill("10");
        await form.getByLabel("Duration (ms) of rate limit 1").fill("1000");
        await form.getByLabel("Tags", { exact: true }).fill("route=orders, team=shop");
        await form.getByRole("checkbox", { name: /identity/ }).check();
        await form.getByLabel("Meta fields").fill("plan");
        await form.getByRole("checkbox", { name: /Strip the key/ }).check();
        expect(await seriousViolations(page)).toEqual([]);
      });
      await createThroughPage(page, { name: "admin", apiId, path: "/admin/**" });
      await expect.poll(stored, SLOW).toEqual([
        ["orders", 0, false],
        ["admin", 1, false],
      ]);
      expect(await definitions()).toEqual([
        {
          name: "orders",
          apiId,
          hosts: ["api.example.com"],
          paths: ["/orders/**", "/carts/**"],
          methods: ["GET", "POST"],
          key: { from: "header", name: "X-API-Key" },
          permissions: "orders.read OR orders.*",
          cost: 2,
          ratelimits: [{ name: "burst", cost: 1, limit: 10, duration: 1000 }],
          tags: ["route=orders", "team=shop"],
          upstream: { identity: true, meta: ["plan"] },
          stripKey: true,
        },
        { name: "admin", apiId, paths: ["/admin/**"] },
      ]);
      const table = page.getByRole("region", { name: "Policies" });
      await expect.poll(() => table.getByRole("row").count(), SLOW).toBe(3);
      await table
        .getByRole("row", { name: /orders/ })
        .getByText("GET POST · api.example.com · /orders/** /carts/**")
        .waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Bad fields are named before anything is sent, each at its input.
      await page.getByRole("button", { name: "Create a policy" }).click();
      const form = page.getByRole("form", { name: "Create a policy" });
      await form.getByLabel("Name", { exact: true }).fill("a b");
      await form.getByLabel("Path 1", { exact: true }).fill("orders");
      await form.getByLabel("Key from").selectOption("query");
      await form.getByRole("button", { name: "Create policy" }).click();
      const summary = form.getByRole("alert");
      await summary.getByText("Check these fields before saving:").waitFor();
      expect(await summary.getByRole("listitem").allTextContents()).toEqual([
        "Name: 1 to 64 letters, digits and _ . : - (no spaces).",
        "API: give the id of one of this workspace's APIs (api_…).",
        "Path 1: starts with / and holds no spaces, such as /v1/orders/**.",
        "Key name: a key read from a query needs the query's name.",
      ]);
      const name = form.getByLabel("Name", { exact: true });
      expect(await name.getAttribute("aria-invalid")).toBe("true");
      expect(await page.evaluate("document.activeElement?.id")).toBe(await name.getAttribute("id"));
      expect(await form.getByLabel("Path 1", { exact: true }).getAttribute("aria-invalid")).toBe("true");
      expect(await seriousViolations(page)).toEqual([]);
      expect(await stored()).toHaveLength(2);

      // Fixed, but naming an API this workspace does not have: the API's refusal, at the API field too.
      await form.getByLabel("Name", { exact: true }).fill("q");
      await form.getByLabel("Path 1", { exact: true }).fill("/q/**");
      await form.getByLabel("Key name", { exact: true }).fill("key");
      await form.getByLabel("API", { exact: true }).fill("api_not_in_this_workspace");
      await form.getByRole("button", { name: "Create policy" }).click();
      await form.getByText("404 Not Found").waitFor();
      await form.getByText("The specified API was not found.", { exact: true }).waitFor();
      await form
        .getByText("API: The specified API was not found. Pick one of this workspace's APIs.")
        .waitFor();
      expect(await form.getByLabel("API", { exact: true }).getAttribute("aria-invalid")).toBe("true");
      expect(await seriousViolations(page)).toEqual([]);
      await form.getByRole("button", { name: "Cancel" }).click();
      expect(await stored()).toHaveLength(2);

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

      // Editing starts from the policy as stored; a change to one field keeps every other.
      await table
        .getByRole("row", { name: /orders/ })
        .getByRole("button", { name: "Edit" })
        .click();
      const edit = page.getByRole("form", { name: "Edit orders" });
      expect(await edit.getByLabel("Path 2", { exact: true }).inputValue()).toBe("/carts/**");
      expect(await edit.getByLabel("Key name", { exact: true }).inputValue()).toBe("X-API-Key");
      expect(await seriousViolations(page)).toEqual([]);
      if (shots) await page.screenshot({ path: join(resolve(root, shots), "policies.png"), fullPage: true });
      await edit.getByLabel("Permissions", { exact: true }).fill("orders.read");
      await edit.getByRole("button", { name: "Remove path 2" }).click();
      await edit.getByRole("button", { name: "Save policy" }).click();
      await expect
        .poll(async () => (await definitions())[1], SLOW)
        .toMatchObject({ permissions: "orders.read", paths: ["/orders/**"], dryRun: true, cost: 2 });

      // An edit naming an unknown API is refused as well, and changes nothing.
      await table.getByRole("row", { name: /admin/ }).getByRole("button", { name: "Edit" }).click();
      const editAdmin = page.getByRole("form", { name: "Edit admin" });
      await editAdmin.getByLabel("API", { exact: true }).fill("api_unknown");
      await editAdmin.getByRole("button", { name: "Save policy" }).click();
      await editAdmin.getByText("The specified API was not found.", { exact: true }).waitFor();
      await editAdmin.getByRole("button", { name: "Cancel" }).click();
      expect((await definitions())[0]).toEqual({ name: "admin", apiId, paths: ["/admin/**"] });

      await table.getByRole("button", { name: "Delete policy admin" }).click();
      await page.getByRole("button", { name: "Delete admin" }).click();
      await expect.poll(stored, SLOW).toEqual([["orders", 0, true]]);
      expect(await seriousViolations(page)).toEqual([]);

      // 390 pixels wide, the form with a rate-limit row and a problem shown still fits the screen.
      await page.setViewportSize({ width: 390, height: 844 });
      await table.getByRole("button", { name: "Edit" }).click();
      const narrow = page.getByRole("form", { name: "Edit orders" });
      await narrow.getByLabel("Name", { exact: true }).fill("");
      await narrow.getByRole("button", { name: "Save policy" }).click();
      await narrow.getByRole("alert").getByText("Name: give the policy a name.").waitFor();
      expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
