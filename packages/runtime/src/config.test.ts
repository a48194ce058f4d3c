import { afterEach, describe, expect, it } from "vitest";
import { env } from "./config.ts";

const NAME = "LATCHKEY_CONFIG_TEST_FLAG";

describe("env.bool", () => {
  afterEach(() => {
    delete process.env[NAME];
  });

  it("answers the fallback when the variable is unset or empty", () => {
    expect(env.bool(NAME, false)).toBe(false);
    process.env[NAME] = "";
    expect(env.bool(NAME, true)).toBe(true);
  });

  it("reads true and false", () => {
    process.env[NAME] = "true";
    expect(env.bool(NAME, false)).toBe(true);
    process.env[NAME] = "false";
    expect(env.bool(NAME, true)).toBe(false);
  });

  it("refuses anything else, naming the variable and the value", () => {
    process.env[NAME] = "yes";
    expect(() => env.bool(NAME, false)).toThrow(`${NAME} must be true or false, got 'yes'`);
  });
});
