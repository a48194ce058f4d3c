import { mkdirSync } from "node:fs";
import { createRouterTransport, type Transport } from "@connectrpc/connect";
import { CONTEXT_NAMES, type ContextName, createLogger, TestClock } from "@latchkey/runtime";
import { chromium } from "playwright-core";
import { createGateway } from "../src/gateway.ts";
import { listen } from "../src/listen.ts";

/**
 * `npm run docs:screenshot`: docs/images/api-reference.png, the reference at /docs as headless
 * Chromium shows it (Debian's chromium, apt-get install -y chromium). The gateway runs over services
 * that answer nothing: the reference needs only what the gateway serves itself.
 */
const none = createRouterTransport(() => {});
const gateway = createGateway({
  ...(Object.fromEntries(CONTEXT_NAMES.map((name) => [name, none])) as Record<ContextName, Transport>),
  log: createLogger("screenshot", "silent"),
  clock: new TestClock(),
});
const server = await listen(gateway, 0, "127.0.0.1");
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const refused: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") refused.push(m.text());
  });
  // Anything but the gateway itself would be a CDN the page depends on: refuse and report it.
  await page.route("**/*", (route) =>
    route.request().url().startsWith(`http://127.0.0.1:${server.port}/`) ? route.continue() : route.abort(),
  );
  await page.goto(`http://127.0.0.1:${server.port}/docs#tag/keys/POST/v2/keys.verifyKey`, {
    waitUntil: "networkidle",
  });
  await page.getByText("Latchkey API").first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1_500);
  const out = new URL("../../docs/images/api-reference.png", import.meta.url);
  mkdirSync(new URL(".", out), { recursive: true });
  await page.screenshot({ path: out.pathname });
  process.stdout.write(`wrote ${out.pathname}\n`);
  if (refused.length > 0) console.warn(`console errors:\n${refused.join("\n")}`);
} finally {
  await browser.close();
  await server.close();
  await gateway.close();
}
