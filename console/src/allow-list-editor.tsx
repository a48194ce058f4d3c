import { useState } from "preact/hooks";
import { allowListEntries, entryProblem, MAX_ENTRIES } from "./allow-list.ts";
import { ErrorBox, Field, useAction } from "./ui.tsx";

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
