import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRouterTransport } from "@connectrpc/connect";
import {
  CONTENT_SECURITY_POLICY,
  consolePages,
  type Pages,
  PORTAL_CONTENT_SECURITY_POLICY,
  pagesFrom,
} from "@latchkey/console/pages";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { createLogger, systemClock } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGateway } from "./gateway.ts";
import { listen } from "./listen.ts";

const dir = mkdtempSync(join(tmpdir(), "console-pages-"));
mkdirSync(join(dir, "assets"));
writeFileSync(
  join(dir, "index.html"),
  '<!doctype html><script type="module" src="/assets/app-Ab12.js"></script>',
);
writeFileSync(join(dir, "assets", "app-Ab12.js"), 'console.log("é")');
writeFileSync(join(dir, "assets", "app-Ab12.css"), "body{}");
writeFileSync(join(dir, "favicon.svg"), "<svg/>");
writeFileSync(join(dir, "photo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
// The portal web app's build (console/vite.portal.config.ts) is the portal/ folder of the console's.
mkdirSync(join(dir, "portal", "assets"), { recursive: true });
writeFileSync(
  join(dir, "portal", "index.html"),
  '<!doctype html><script type="module" src="./assets/portal-Cd34.js"></script>',
);
writeFileSync(join(dir, "portal", "assets", "portal-Cd34.js"), "render()");

const asked: string[] = [];
let url = "";
let close: () => Promise<void>;

beforeAll(async () => {
  const served = pagesFrom(dir)!;
  const pages: Pages = (x, path) => {
    asked.push(path);
    return served(x, path);
  };
  const none = (service: any) => createRouterTransport((router) => router.service(service, {}));
  const gateway = createGateway({
    keys: none(KeysService),
    ratelimit: none(RatelimitService),
    identity: none(IdentityService),
    analytics: none(AnalyticsService),
    webhooks: none(WebhookService),
    portal: none(PortalService),
    log: createLogger("console-test", "silent"),
    clock: systemClock,
    pages,
  });
  const server = await listen(gateway, 0, "127.0.0.1");
  url = `http://127.0.0.1:${server.port}`;
  close = server.close;
});

afterAll(async () => {
  await close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the console's pages, served by the gateway", () => {
  it("answers / and /index.html with index.html, revalidated every time, under the Content-Security-Policy", async () => {
    for (const path of ["/", "/index.html"]) {
      const res = await fetch(url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      expect(res.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(await res.text()).toContain("/assets/app-Ab12.js");
    }
  });

  it("answers hashed assets as immutable for a year, with their length in bytes", async () => {
    const res = await fetch(`${url}/assets/app-Ab12.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength('console.log("é")')));
    expect(await res.text()).toBe('console.log("é")');
    const css = await fetch(`${url}/assets/app-Ab12.css`);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    const icon = await fetch(`${url}/favicon.svg`);
    expect([icon.status, icon.headers.get("content-type"), icon.headers.get("cache-control")]).toEqual([
      200,
      "image/svg+xml",
      "no-cache",
    ]);
  });

  it("answers HEAD without a body", async () => {
    const res = await fetch(`${url}/`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  it("answers 404 in the error shape for a missing file, a file of another type and a method other than GET", async () => {
    for (const [method, path] of [
      ["GET", "/assets/missing.js"],
      ["GET", "/photo.png"],
      ["GET", "/assets/"],
      ["GET", "/index.html/"],
      ["POST", "/"],
    ] as const) {
      const res = await fetch(url + path, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as any).error.type).toBe(
        "https://unkey.com/docs/errors/unkey/resource/not_found",
      );
    }
  });

  it("is never asked about an operation's path: those are answered by the API first", async () => {
    asked.length = 0;
    const post = await fetch(`${url}/v2/apis.createApi`, { method: "POST", body: "{}" });
    expect(post.status).toBe(400);
    const get = await fetch(`${url}/v2/keys.verifyKey`);
    expect(get.status).toBe(405);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(asked).toEqual([]);
    expect((await fetch(`${url}/v2/keys.nothing`)).status).toBe(404);
    expect(asked).toEqual(["/v2/keys.nothing"]);
  });

  it("answers the portal web app at /portal/ and /portal/index.html under the portal's policy, revalidated", async () => {
    for (const path of ["/portal/", "/portal/index.html", "/portal/?code=pc_123"]) {
      const res = await fetch(url + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      expect(res.headers.get("content-security-policy")).toBe(PORTAL_CONTENT_SECURITY_POLICY);
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(await res.text()).toContain("./assets/portal-Cd34.js");
    }
    const asset = await fetch(`${url}/portal/assets/portal-Cd34.js`);
    expect([asset.status, asset.headers.get("cache-control"), await asset.text()]).toEqual([
      200,
      "public, max-age=31536000, immutable",
      "render()",
    ]);
    expect(asset.headers.get("content-security-policy")).toBe(PORTAL_CONTENT_SECURITY_POLICY);
    // The console's own answers keep the console's policy.
    expect((await fetch(`${url}/`)).headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
    expect((await fetch(`${url}/portal/assets/missing.js`)).status).toBe(404);
    // The page names its files relative to its folder: /portal (no slash) would find them at /assets/.
    expect((await fetch(`${url}/portal`)).status).toBe(404);
    expect((await fetch(`${url}/portal/`, { method: "POST" })).status).toBe(404);
  });

  it("lets the portal's page load https images (a portal's logo) and nothing else from elsewhere, with no inline script", () => {
    const directives = new Map(
      PORTAL_CONTENT_SECURITY_POLICY.split(";").map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name!, values.join(" ")];
      }),
    );
    expect(directives.get("img-src")).toBe("'self' data: https:");
    expect(directives.get("script-src")).toBe("'self'");
    expect(directives.get("style-src")).toBe("'self'");
    expect(directives.get("connect-src")).toBe("'self'");
    expect(directives.get("default-src")).toBe("'self'");
    expect(directives.get("frame-ancestors")).toBe("'none'");
    expect(PORTAL_CONTENT_SECURITY_POLICY).not.toContain("unsafe");
  });

  it("serves only the portal with CONSOLE=false, only the console with PORTAL_APP=false, and is undefined with both or without index.html", async () => {
    const empty = mkdtempSync(join(tmpdir(), "console-empty-"));
    try {
      expect(pagesFrom(empty)).toBeUndefined();
    } finally {
      rmSync(empty, { recursive: true });
    }
    const served = (pages: Pages, path: string) => {
      let status = 0;
      pages({ method: "GET", reply: (s) => (status = s) }, path);
      return status;
    };
    const portalOnly = pagesFrom(dir, { console: false, portal: true })!;
    expect(
      ["/", "/index.html", "/assets/app-Ab12.js", "/portal/", "/portal/assets/portal-Cd34.js"].map((p) =>
        served(portalOnly, p),
      ),
    ).toEqual([0, 0, 0, 200, 200]);
    const consoleOnly = pagesFrom(dir, { console: true, portal: false })!;
    expect(
      ["/", "/index.html", "/assets/app-Ab12.js", "/portal/", "/portal/assets/portal-Cd34.js"].map((p) =>
        served(consoleOnly, p),
      ),
    ).toEqual([200, 200, 200, 0, 0]);
    process.env["CONSOLE"] = "false";
    process.env["PORTAL_APP"] = "false";
    try {
      expect(consolePages()).toBeUndefined();
    } finally {
      delete process.env["CONSOLE"];
      delete process.env["PORTAL_APP"];
    }
  });
});
