import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";
import { type Answer, ApiError, type Pagination } from "./api.ts";

/** The state of a load: data once it came, the API's error as written, and a way to load again. */
export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => current && setState({ error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** Runs an action, keeping its error (as the API wrote it) and whether it is running. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}

/**
 * A list read page by page over a cursor (the API's `pagination`): the rows so far, and `more()`
 * appending the next page. It starts afresh when `deps` change or on `reload()`; an answer to an
 * earlier start is dropped, so a slow first page cannot land over a newer one.
 */
export function usePages<T>(page: (cursor: string | undefined) => Promise<Answer<T[]>>, deps: unknown[]) {
  const [rows, setRows] = useState<T[]>([]);
  const [next, setNext] = useState<Pagination | undefined>(undefined);
  const [loaded, setLoaded] = useState(false);
  const [round, setRound] = useState(0);
  const generation = useRef(0);
  const action = useAction();
  const fetchPage = async (cursor: string | undefined, from: T[]) => {
    const mine = generation.current;
    const res = await action.run(() => page(cursor));
    if (mine !== generation.current) return;
    if (res) {
      setRows([...from, ...res.data]);
      setNext(res.pagination);
    } else if (cursor === undefined) {
      setRows([]);
      setNext(undefined);
    }
    setLoaded(true);
  };
  useEffect(() => {
    generation.current += 1;
    fetchPage(undefined, []);
  }, [...deps, round]);
  return {
    rows,
    loaded,
    busy: action.busy,
    error: action.error,
    hasMore: next?.hasMore === true && next.cursor !== undefined,
    more: () => fetchPage(next?.cursor, rows),
    reload: () => setRound((r) => r + 1),
  };
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

/** An error of the API shown as it wrote it: a refusal (403) says so, then the message itself. */
export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  if (!(error instanceof ApiError)) {
    return (
      <div class="error" role="alert">
        <p>{String((error as Error)?.message ?? error)}</p>
      </div>
    );
  }
  const heading =
    error.status === 403
      ? "Refused: this root key lacks a permission"
      : error.status === 401
        ? "The root key was not accepted"
        : `${error.status} ${error.title}`;
  return (
    <div class="error" role="alert">
      <p>
        <strong>{heading}</strong>
      </p>
      <p class="detail">{error.detail}</p>
      {error.errors.length > 0 && (
        <ul>
          {error.errors.map((v) => (
            <li key={v.location}>
              <code>{v.location}</code>: {v.message}
              {v.fix ? ` ${v.fix}` : ""}
            </li>
          ))}
        </ul>
      )}
      {error.requestId && <p class="muted small">Request {error.requestId}</p>}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <section class="empty">
      <h3>{title}</h3>
      {children}
    </section>
  );
}

/** A curl command for this Latchkey, for empty states: the root key stays a variable. */
export function Curl({ operation, body }: { operation: string; body: unknown }) {
  const text = `curl -s ${location.origin}/v2/${operation} \\\n  -H "Authorization: Bearer $ROOT_KEY" \\\n  -d '${JSON.stringify(body)}'`;
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable block must be reachable by keyboard
    <pre class="code" tabIndex={0}>
      {text}
    </pre>
  );
}

/** Copies `text` to the clipboard; says whether it did. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState<"" | "copied" | "failed">("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone("copied");
    } catch {
      setDone("failed");
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={copy}>
        {label}
      </button>
      <span role="status" class="muted">
        {done === "copied" ? "Copied" : done === "failed" ? "Copy failed: select the text and copy it" : ""}
      </span>
    </span>
  );
}

/**
 * A secret shown the only time it can be (a new key, a webhook's signing secret): with a copy button and
 * the warning. `children` follow it (ids, links).
 */
export function ShownOnce({
  title,
  warning,
  label,
  copy,
  secret,
  testId,
  children,
}: {
  title: string;
  warning: string;
  label: string;
  copy: string;
  secret: string;
  testId: string;
  children?: ComponentChildren;
}) {
  const id = useId();
  return (
    <section class="newkey" aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      <p class="warning">{warning}</p>
      <div class="row">
        <label class="grow">
          <span class="sr-only">{label}</span>
          <input class="mono" readOnly value={secret} data-testid={testId} />
        </label>
        <CopyButton text={secret} label={copy} />
      </div>
      {children}
    </section>
  );
}

/** A key shown the only time it can be: with a copy button and the warning. */
export function NewKey({ keyText, keyId, href }: { keyText: string; keyId: string; href?: string }) {
  return (
    <ShownOnce
      title="Your new key"
      warning="This is the only time the key is shown. Copy it now and keep it somewhere safe: Latchkey keeps only its hash (unless it was created recoverable)."
      label="The new key"
      copy="Copy key"
      secret={keyText}
      testId="new-key"
    >
      <p class="muted">
        Key id <code>{keyId}</code>
        {href && (
          <>
            {" · "}
            <a href={href}>Open the key</a>
          </>
        )}
      </p>
    </ShownOnce>
  );
}

/** A modal asking to confirm what `message` names; `confirm` is the button's words. */
export function Confirm({
  open,
  title,
  message,
  confirm,
  onConfirm,
  onCancel,
  children,
}: {
  open: boolean;
  title: string;
  message: ComponentChildren;
  confirm: string;
  onConfirm(): void;
  onCancel(): void;
  children?: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={onCancel} onClose={() => open && onCancel()}>
      <h2 id="confirm-title">{title}</h2>
      <div>{message}</div>
      {children}
      <div class="row end">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm}>
          {confirm}
        </button>
      </div>
    </dialog>
  );
}

export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: string;
  /** What is wrong with the value, shown under it: the control names it with `aria-describedby` (FieldError). */
  error?: { id: string; message: string } | undefined;
  children: ComponentChildren;
}) {
  // The hint sits outside the label, so the control's name is the label alone.
  return (
    <div class="field">
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the control is the child given */}
      <label>
        <span>{label}</span>
        {children}
      </label>
      {hint && <small class="muted">{hint}</small>}
      <FieldError error={error} />
    </div>
  );
}

/** A field's problem, under it; its id is what the field's control names in `aria-describedby`. */
export function FieldError({ error }: { error: { id: string; message: string } | undefined }) {
  if (!error) return null;
  return (
    <small class="field-error" id={error.id}>
      {error.message}
    </small>
  );
}

/** A number input; its value is kept as the text typed (empty while nothing is), and read with Number(). */
export function NumberInput({
  value,
  onValue,
  min,
  max,
  step,
  required,
}: {
  value: string | number;
  onValue(text: string): void;
  min?: number;
  max?: number;
  step?: number;
  required?: boolean;
}) {
  return (
    <input
      type="number"
      min={min}
      max={max}
      step={step}
      required={required}
      value={value}
      onInput={(e) => onValue(e.currentTarget.value)}
    />
  );
}

/** A labelled number input, as the forms ask for credits, limits and windows. */
export function NumberField({
  label,
  hint,
  ...input
}: { label: string; hint?: string } & Parameters<typeof NumberInput>[0]) {
  return (
    <Field label={label} hint={hint}>
      <NumberInput {...input} />
    </Field>
  );
}

export type Refill = "" | "daily" | "monthly";

/** When a key's credits refill: never (""), daily or monthly. */
export function RefillField({ value, onChange }: { value: Refill; onChange(next: Refill): void }) {
  return (
    <Field label="Refill">
      <select value={value} onChange={(e) => onChange(e.currentTarget.value as Refill)}>
        <option value="">never</option>
        <option value="daily">daily</option>
        <option value="monthly">monthly</option>
      </select>
    </Field>
  );
}

/**
 * A table in a scrollable region that a keyboard can reach: a header row of `columns` (and one for the
 * row's buttons when `actions`), then `children`, the body's rows.
 */
export function TableWrap({
  label,
  columns,
  actions = false,
  children,
}: {
  label: string;
  columns: string[];
  actions?: boolean;
  children: ComponentChildren;
}) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section class="table-wrap" aria-label={label} tabIndex={0}>
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </section>
  );
}

/** A row's delete button, named for screen readers after what it deletes. */
export function DeleteButton({ what, onClick }: { what: string; onClick(): void }) {
  return (
    <button type="button" class="danger" onClick={onClick}>
      Delete<span class="sr-only"> {what}</span>
    </button>
  );
}

/** Previous and next page over a cursor API: `cursors` are the pages' cursors so far, `next` the next one's. */
export function Pager({
  cursors,
  next,
  onChange,
}: {
  cursors: string[];
  next: string | undefined;
  onChange(cursors: string[]): void;
}) {
  return (
    <div class="row">
      {cursors.length > 0 && (
        <button type="button" onClick={() => onChange(cursors.slice(0, -1))}>
          Previous page
        </button>
      )}
      {next && (
        <button type="button" onClick={() => onChange([...cursors, next])}>
          Next page
        </button>
      )}
    </div>
  );
}

export const when = (ms: number | undefined) => (ms === undefined ? "—" : new Date(ms).toLocaleString());

/** "2 h", "30 s": a duration in milliseconds, for rate limits. */
export function duration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "min"],
    [1000, "s"],
  ];
  for (const [size, unit] of units) if (ms % size === 0 && ms >= size) return `${ms / size} ${unit}`;
  return `${ms} ms`;
}

/** JSON typed into a textarea: undefined when empty, else an object, else an error naming the problem. */
export function parseMeta(text: string): Record<string, unknown> | undefined {
  if (text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`Meta is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error('Meta must be a JSON object, such as {"plan": "pro"}.');
  }
  return value as Record<string, unknown>;
}

/** A comma- or space-separated list typed into one input. */
export const list = (text: string) => text.split(/[\s,]+/).filter(Boolean);
