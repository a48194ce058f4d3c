import { describe, expect, it } from "vitest";
import { consoleUnderTest, seriousViolations } from "./browser.ts";

// A key's credit thresholds on its page: Debian's Chromium driving the console that `npm start` serves
// (embedded storage), the test checking through the API what the page did.

const lk = consoleUnderTest("thresholds");
const { post } = lk;
const SLOW = { timeout: 30_000, interval: 200 };

describe("console: credit thresholds", () => {
  it("shows a key's thresholds, saves new ones, returns it to its API's, shows a bad one's refusal, and gives them at creation", async () => {
    const { apiId } = (await post("apis.createApi", { name: "metered", creditThresholds: [30] })).body.data;
    const { keyId } = (
      await post("keys.createKey", {
        apiId,
        name: "metered key",
        credits: { remaining: 100 },
        creditThresholds: [50, 0],
      })
    ).body.data;
    const context = await lk.browser.newContext({
      viewport: { width: 1280, height: 900 },
      baseURL: lk.latchkey.url,
    });
    const page = await context.newPage();
    try {
      await page.goto("/");
      await page.getByLabel("Root key").fill(lk.rootKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("navigation", { name: "Sections" }).waitFor();
      await page.goto(`/#/apis/${apiId}/keys/${keyId}`);
      await page.getByRole("heading", { name: /metered key/ }).waitFor();
      const card = page.getByRole("form", { name: "Credit thresholds" });
      expect(await card.getByTestId("thresholds-now").textContent()).toContain("50 %, 0 %");
      expect(await page.getByLabel("Thresholds (percent)").inputValue()).toBe("50, 0");

      await page.getByLabel("Thresholds (percent)").fill("20, 75 %, 5");
      await page.getByRole("button", { name: "Save thresholds" }).click();
      await expect
        .poll(async () => (await post("keys.getKey", { keyId })).body.data.creditThresholds, SLOW)
        .toEqual([75, 20, 5]);
      await expect
        .poll(() => card.getByTestId("thresholds-now").textContent(), SLOW)
        .toContain("75 %, 20 %, 5 %");

      // Over 100 is the API's 400, shown as written; the key keeps its thresholds.
      await page.getByLabel("Thresholds (percent)").fill("50, 120");
      await page.getByRole("button", { name: "Save thresholds" }).click();
      const alert = card.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(/100/);
      expect((await post("keys.getKey", { keyId })).body.data.creditThresholds).toEqual([75, 20, 5]);

      // Emptied: the key takes its API's again.
      await page.getByLabel("Thresholds (percent)").fill("");
      await page.getByRole("button", { name: "Save thresholds" }).click();
      await expect
        .poll(async () => (await post("keys.getKey", { keyId })).body.data.creditThresholds ?? null, SLOW)
        .toBeNull();
      await expect.poll(() => card.getByTestId("thresholds-now").textContent(), SLOW).toContain("its API's");
      expect(await seriousViolations(page)).toEqual([]);

      // Given when the key is created, with its credits.
      await page.goto(`/#/apis/${apiId}/new-key`);
      await page.getByLabel("Name").fill("created with thresholds");
      await page.getByLabel("Credits", { exact: true }).fill("200");
      await page.getByLabel("Credit thresholds (percent)").fill("10, 60");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByRole("heading", { name: "Key created" }).waitFor();
      const created = (await post("apis.listKeys", { apiId })).body.data.find(
        (k: { name?: string }) => k.name === "created with thresholds",
      );
      expect(created.creditThresholds).toEqual([60, 10]);
    } finally {
      await context.close();
    }
  });
});
