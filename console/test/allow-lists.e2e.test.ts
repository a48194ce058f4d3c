import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { allowListEntries, entryProblem } from "../src/allow-list.ts";
import { consoleUnderTest, seriousViolations, watch } from "./browser.ts";

// The API's and the identity's IP allow-lists edited on their pages (apis.updateApi,
// identities.updateIdentity): Debian's Chromium against `npm start` on its embedded storage.

const lk = consoleUnderTest("console-allow-lists");
const { post } = lk;
const SLOW = { timeout: 30_000, interval: 200 };

async function signIn(page: Page) {
  await page.goto("/");
  await page.getByLabel("Root key").fill(lk.rootKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Sections" }).waitFor();
}

/** The allow-list form whose heading is `title`. */
const form = (page: Page, title: string) => page.getByRole("form", { name: title });

describe("allow-list entries checked in the console before they are sent", () => {
  it("splits lines, commas and spaces, and names what is wrong with an entry", () => {
    expect(allowListEntries(" 10.0.0.0/8\n\n2001:db8::/32, 192.0.2.1 ")).toEqual([
      "10.0.0.0/8",
      "2001:db8::/32",
      "192.0.2.1",
    ]);
    expect(["10.0.0.0/8", "192.0.2.1", "2001:db8::/32", "::ffff:10.0.0.1", "::/0"].map(entryProblem)).toEqual(
      [undefined, undefined, undefined, undefined, undefined],
    );
    expect(entryProblem("10.0.0.0/33")).toBe("'10.0.0.0/33': the prefix after / must be 0 to 32 for IPv4.");
    expect(entryProblem("2001:db8::/129")).toBe(
      "'2001:db8::/129': the prefix after / must be 0 to 128 for IPv6.",
    );
    expect(entryProblem("10.0.0.300")).toBe("'10.0.0.300': each part of an IPv4 address is 0 to 255.");
    expect(entryProblem("office")).toBe(
      "'office' is not an IP address or CIDR (e.g. 203.0.113.0/24 or 2001:db8::/32).",
    );
  });
});

describe("the console edits the API's and the identity's IP allow-lists", { timeout: 180_000 }, () => {
  it("saves each list, a verification follows it, and a bad entry is named before and by the API", async () => {
    const apiId: string = (await post("apis.createApi", { name: "office-only" })).body.data.apiId;
    const identityId: string = (await post("identities.createIdentity", { externalId: "user_office" })).body
      .data.identityId;
    const { key } = (await post("keys.createKey", { apiId, externalId: "user_office" })).body.data;
    const verify = async (ipAddress: string) =>
      (await post("keys.verifyKey", { key, ipAddress })).body.data.code as string;
    expect(await verify("198.51.100.1")).toBe("VALID");

    const context = await lk.browser.newContext({
      viewport: { width: 1280, height: 900 },
      baseURL: lk.origin,
    });
    const seen = watch(context, lk.origin);
    const page = await context.newPage();
    try {
      await signIn(page);
      await page.goto(`/#/apis/${apiId}`);
      const apiList = form(page, "IP allow-list of the API");
      await apiList.getByLabel("Allowed addresses").fill("203.0.113.0/24\n2001:db8::/32");
      await apiList.getByRole("button", { name: "Save allow-list" }).click();
      await apiList.getByRole("status").filter({ hasText: "Saved." }).waitFor();
      expect((await post("apis.getApi", { apiId })).body.data.ipAllowList).toEqual([
        "203.0.113.0/24",
        "2001:db8::/32",
      ]);
      expect(await verify("198.51.100.1")).toBe("FORBIDDEN_IP");
      expect(await verify("203.0.113.5")).toBe("VALID");
      expect(await seriousViolations(page)).toEqual([]);

      // A mistyped entry is named before anything is sent, and nothing changes.
      await apiList.getByLabel("Allowed addresses").fill("203.0.113.0/24\n203.0.113.0/33");
      await apiList.getByRole("button", { name: "Save allow-list" }).click();
      const alert = apiList.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toContain(
        "'203.0.113.0/33': the prefix after / must be 0 to 32 for IPv4.",
      );
      expect(await seriousViolations(page)).toEqual([]);
      expect((await post("apis.getApi", { apiId })).body.data.ipAllowList).toEqual([
        "203.0.113.0/24",
        "2001:db8::/32",
      ]);
      // One only the API can tell (here, an address it cannot parse though it looks like one) is its 400, naming it.
      await apiList.getByLabel("Allowed addresses").fill("1:2:3:4:5:6:7:8:9");
      await apiList.getByRole("button", { name: "Save allow-list" }).click();
      await expect
        .poll(async () => (await apiList.getByRole("alert").textContent()) ?? "", SLOW)
        .toContain("'1:2:3:4:5:6:7:8:9' is neither an IP address nor a CIDR");

      await page.goto(`/#/identities/${identityId}`);
      const identityList = form(page, "IP allow-list of the identity");
      await identityList.getByLabel("Allowed addresses").fill("203.0.113.128/25");
      await identityList.getByRole("button", { name: "Save allow-list" }).click();
      await identityList.getByRole("status").filter({ hasText: "Saved." }).waitFor();
      expect((await post("identities.getIdentity", { identity: identityId })).body.data.ipAllowList).toEqual([
        "203.0.113.128/25",
      ]);
      // In the API's list, outside the identity's.
      await expect.poll(() => verify("203.0.113.5"), SLOW).toBe("FORBIDDEN_IP");
      expect(await verify("203.0.113.200")).toBe("VALID");
      expect(await seriousViolations(page)).toEqual([]);

      // Cleared: the API's list alone applies again.
      await page.reload();
      await identityList.getByLabel("Allowed addresses").fill("");
      await identityList.getByRole("button", { name: "Save allow-list" }).click();
      await identityList.getByRole("status").filter({ hasText: "Saved." }).waitFor();
      expect(await verify("203.0.113.5")).toBe("VALID");
      expect([seen.outside, seen.cspViolations, seen.errors]).toEqual([[], [], []]);
    } finally {
      await context.close();
    }
  });
});
