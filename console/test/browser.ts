import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { type Proc, startProcess } from "../../test/testing/process-stack.ts";
import { ensureBuilt } from "../server/build.ts";

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

/** An API call's status and JSON body, read loosely: each test knows the shape it asked for. */
// biome-ignore lint/suspicious/noExplicitAny: the tests read the bodies of many operations
export type Answer = { status: number; body: any };

/** What consoleUnderTest starts for a test file; its fields are set once the file's beforeAll has run. */
export interface ConsoleUnderTest {
  /** Its data folder: the CLI (apps/latchkey/src/cli.ts) run with DATA_DIR set to it acts on the same Latchkey. */
  dataDir: string;
  latchkey: Proc;
  browser: Browser;
  /** The root key `npm start` printed. */
  rootKey: string;
  origin: string;
  /** A call to the API, with the printed root key unless `key` is given. */
  post(operation: string, body: unknown, key?: string): Promise<Answer>;
}

/**
 * A console browser test's Latchkey and browser: `npm start` on its embedded storage in a data folder of
 * its own (`env` adds settings), its printed root key, and Debian's Chromium; started before the file's
 * tests and stopped after them. With CONSOLE_SCREENSHOTS set, its folder is made.
 */
export function consoleUnderTest(name: string, env: Record<string, string> = {}): ConsoleUnderTest {
  const dataDir = mkdtempSync(join(tmpdir(), `latchkey-${name}-`));
  const under = {
    dataDir,
    async post(operation: string, body: unknown, key?: string) {
      const res = await fetch(`${under.origin}/v2/${operation}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key ?? under.rootKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Answer["body"] };
    },
  } as ConsoleUnderTest;
  beforeAll(async () => {
    await ensureBuilt();
    under.latchkey = await startProcess("latchkey", "apps/latchkey/src/start.ts", {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      NATS_URL: "",
      METRICS_PORT: "0",
      ...env,
    });
    under.rootKey = await printedRootKey(under.latchkey);
    under.origin = under.latchkey.url;
    under.browser = await launch();
    const shots = process.env["CONSOLE_SCREENSHOTS"];
    if (shots) mkdirSync(resolve(import.meta.dirname, "..", "..", shots), { recursive: true });
  });
  afterAll(async () => {
    await under.browser?.close();
    await under.latchkey?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return under;
}
