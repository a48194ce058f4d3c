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

describe("env.int", () => {
  afterEach(() => {
    delete process.env[NAME];
  });

  it("reads an integer, at least the minimum when one is given, and refuses anything else", () => {
    expect(env.int(NAME, 7, 1)).toBe(7);
    process.env[NAME] = "1";
    expect(env.int(NAME, 7, 1)).toBe(1);
    process.env[NAME] = "0";
    expect(env.int(NAME, 7)).toBe(0);
    expect(() => env.int(NAME, 7, 1)).toThrow(`${NAME} must be an integer of at least 1, got '0'`);
    process.env[NAME] = "1.5";
    expect(() => env.int(NAME, 7, 1)).toThrow(`${NAME} must be an integer, got '1.5'`);
  });
});
