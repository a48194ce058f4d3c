import { describe, expect, it } from "vitest";
import { accentColor, contrast, logoUrl, returnUrl, textOn, title } from "./branding.ts";

describe("a portal's branding, as the portal page takes it", () => {
  it("takes #rgb and #rrggbb colours only, nothing CSS could read as more than a colour", () => {
    expect(accentColor("#4F46E5")).toBe("#4f46e5");
    expect(accentColor(" #abc ")).toBe("#aabbcc");
    for (const hostile of [
      "red",
      "#12345",
      "#1234567",
      "#123456; background: url(https://evil.example/x)",
      "var(--x)",
      "rgb(1,2,3)",
      "#12345g",
      "",
      42,
      null,
      undefined,
    ]) {
      expect(accentColor(hostile), String(hostile)).toBeUndefined();
    }
  });

  it("takes an https logo only: no javascript:, data:, http: or relative URL", () => {
    expect(logoUrl("https://acme.example/logo.svg")).toBe("https://acme.example/logo.svg");
    for (const hostile of [
      "javascript:alert(1)",
      "data:image/svg+xml,<svg onload=alert(1)>",
      "http://acme.example/logo.png",
      "/portal/logo.png",
      "//evil.example/x.png",
      `https://acme.example/${"a".repeat(2048)}`,
      '"><script>alert(1)</script>',
    ]) {
      expect(logoUrl(hostile), hostile).toBeUndefined();
    }
  });

  it("makes a return link of http and https URLs only", () => {
    expect(returnUrl("https://app.example/settings?tab=keys")).toBe("https://app.example/settings?tab=keys");
    expect(returnUrl("http://localhost:3000/")).toBe("http://localhost:3000/");
    for (const hostile of [
      "javascript:alert(document.cookie)",
      "JAVASCRIPT:alert(1)",
      "data:text/html,x",
      "vbscript:x",
      "/relative",
    ]) {
      expect(returnUrl(hostile), hostile).toBeUndefined();
    }
  });

  it("keeps a title as text, without control or bidi-override characters, cut to 120 characters", () => {
    expect(title("  Acme <b>keys</b>  ", "x")).toBe("Acme <b>keys</b>");
    expect(title("a\u202eb\nc", "x")).toBe("abc");
    expect(title("   ", "API keys")).toBe("API keys");
    expect(title(undefined, "API keys")).toBe("API keys");
    const long = title("é".repeat(500), "x");
    expect([...long].length).toBe(120);
    expect(long.endsWith("…")).toBe(true);
  });

  it("writes on any accent in white or black at 4.5:1 or more (WCAG AA), for every colour of a 4-bit grid", () => {
    const steps = [
      "00",
      "11",
      "22",
      "33",
      "44",
      "55",
      "66",
      "77",
      "88",
      "99",
      "aa",
      "bb",
      "cc",
      "dd",
      "ee",
      "ff",
    ];
    let worst = 21;
    for (const r of steps)
      for (const g of steps)
        for (const b of steps) {
          const accent = `#${r}${g}${b}`;
          worst = Math.min(worst, contrast(accent, textOn(accent)));
        }
    expect(worst).toBeGreaterThanOrEqual(4.5);
    expect(textOn("#ffff00")).toBe("#000000");
    expect(textOn("#1d4ed8")).toBe("#ffffff");
  });
});
