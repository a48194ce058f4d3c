/** Most entries an allow-list holds (docs/limits.md); the API refuses more, this says so before sending. */
export const MAX_ENTRIES = 100;

/** The entries typed: one a line (commas and spaces also separate), blanks dropped. */
export function allowListEntries(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * Why an entry is no IPv4 or IPv6 address or CIDR, in words naming it; undefined when it looks like one.
 * The API checks every entry again and its refusal names the entry too: this only spares a round trip
 * and says what is wrong (the prefix, an octet) where it can.
 */
export function entryProblem(entry: string): string | undefined {
  const slash = entry.indexOf("/");
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const prefix = slash === -1 ? undefined : entry.slice(slash + 1);
  const v4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(address);
  const v6 = !v4 && address.includes(":") && /^[0-9a-fA-F:.]+$/.test(address);
  if (!v4 && !v6) return `'${entry}' is not an IP address or CIDR (e.g. 203.0.113.0/24 or 2001:db8::/32).`;
  if (v4 && address.split(".").some((o) => Number(o) > 255)) {
    return `'${entry}': each part of an IPv4 address is 0 to 255.`;
  }
  if (prefix !== undefined) {
    const most = v4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > most) {
      return `'${entry}': the prefix after / must be 0 to ${most} for ${v4 ? "IPv4" : "IPv6"}.`;
    }
  }
  return undefined;
}
