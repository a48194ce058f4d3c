import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's Chromium (scripts/test.sh installs it when missing), headless, with nothing of its own on the network. */
export function launch(): Promise<Browser> {
  return chromium.launch({
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
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. axe is evaluated through the
 * DevTools protocol, which the page's Content-Security-Policy does not govern (an injected script tag
 * it would refuse).
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('"axe" in window'))) await page.evaluate(axeSource);
  const violations = (await page.evaluate(
    'axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)',
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
}

/** Everything a page asked for that was not on `origin`, and every message of a CSP violation. */
export function watch(context: BrowserContext, origin: string) {
  const outside: string[] = [];
  const cspViolations: string[] = [];
  const errors: string[] = [];
  context.on("request", (req) => {
    const url = req.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith("data:")) outside.push(url);
  });
  context.on("console", (msg) => {
    if (msg.text().includes("Content Security Policy")) cspViolations.push(msg.text());
  });
  context.on("weberror", (err) => errors.push(err.error().message));
  return { outside, cspViolations, errors };
}

/** The root key `npm start` prints once at its first start (its output's "Root key (holds *): …" line). */
export async function printedRootKey(latchkey: { output(): string }): Promise<string> {
  const line = /Root key \(holds \*\): (\S+)/;
  const deadline = Date.now() + 10_000;
  while (!line.test(latchkey.output()) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const found = line.exec(latchkey.output());
  if (!found) throw new Error(`npm start printed no root key:\n${latchkey.output()}`);
  return found[1]!;
}
