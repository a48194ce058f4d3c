import { useState } from "preact/hooks";
import { ErrorBox, Field, useAction } from "./ui.tsx";

/** Most entries an allow-list holds (docs/limits.md); the API refuses more, this says so before sending. */
const MAX_ENTRIES = 100;

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

/**
 * An IP allow-list (an API's, a key's or an identity's) edited as text, one CIDR or address a line; saving
 * sends the whole list (an empty one clears it). Entries are checked here first so a mistyped one is
 * named before anything is sent; the API's own refusal is shown as it words it.
 */
export function AllowListEditor({
  id,
  title,
  about,
  current,
  save,
}: {
  /** The heading's id, unique on the page. */
  id: string;
  title: string;
  about: string;
  current: readonly string[] | undefined;
  save(ipAllowList: string[]): Promise<unknown>;
}) {
  const [text, setText] = useState((current ?? []).join("\n"));
  const [problems, setProblems] = useState<string[]>([]);
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const entries = allowListEntries(text);
    const found = entries.map(entryProblem).filter((p): p is string => p !== undefined);
    if (entries.length > MAX_ENTRIES) {
      found.unshift(`An allow-list holds at most ${MAX_ENTRIES} entries; this one has ${entries.length}.`);
    }
    setProblems(found);
    act.clear();
    if (found.length > 0) return;
    if ((await act.run(() => save(entries))) !== undefined) setSaved(true);
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <p class="muted small">{about}</p>
      <Field label="Allowed addresses" hint="One address or CIDR a line. Empty: any address.">
        <textarea
          rows={3}
          class="mono"
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            setSaved(false);
          }}
        />
      </Field>
      <button type="submit" disabled={act.busy}>
        Save allow-list
      </button>
      {problems.length > 0 && (
        <div class="error" role="alert">
          <p>
            <strong>Not saved: fix {problems.length === 1 ? "this entry" : "these entries"}</strong>
          </p>
          <ul>
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </div>
      )}
      {saved && (
        <p class="muted small" role="status">
          Saved.
        </p>
      )}
      <ErrorBox error={act.error} />
    </form>
  );
}
