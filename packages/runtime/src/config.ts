/** Reads environment configuration; every variable the code reads goes through here so deploy/ can be checked against it. */
export const env = {
  string(name: string, fallback?: string): string | undefined {
    const v = process.env[name];
    return v === undefined || v === "" ? fallback : v;
  },
  /** An integer, at least `min` when given. */
  int(name: string, fallback: number, min?: number): number {
    const v = process.env[name];
    if (v === undefined || v === "") return fallback;
    const n = Number(v);
    if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got '${v}'`);
    if (min !== undefined && n < min)
      throw new Error(`${name} must be an integer of at least ${min}, got '${v}'`);
    return n;
  },
  bool(name: string, fallback: boolean): boolean {
    const v = process.env[name];
    if (v === undefined || v === "") return fallback;
    if (v !== "true" && v !== "false") throw new Error(`${name} must be true or false, got '${v}'`);
    return v === "true";
  },
  required(name: string): string {
    const v = process.env[name];
    if (v === undefined || v === "") throw new Error(`${name} is required`);
    return v;
  },
};
