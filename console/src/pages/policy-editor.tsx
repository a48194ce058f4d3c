import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { ApiError, call } from "../api.ts";
import {
  fieldId,
  fieldOfLocation,
  formOf,
  KEY_FROM,
  type KeyFrom,
  type LimitRow,
  METHODS,
  type PolicyForm,
  type Problem,
  policyOf,
  problemsOf,
  type StoredPolicy,
} from "../policy-form.ts";
import { ErrorBox, Field, FieldError, useAction, useLoad } from "../ui.tsx";

/** The workspace's APIs the root key may read, suggested for the policy's API (none when it may not). */
async function apiChoices(): Promise<{ id: string; name: string }[]> {
  try {
    return (await call<{ id: string; name: string }[]>("apis.listApis", { limit: 100 })).data;
  } catch {
    return [];
  }
}

const KEY_FROM_LABEL: Record<KeyFrom, string> = {
  bearer: "Authorization: Bearer (default)",
  header: "a header",
  query: "a query parameter",
  cookie: "a cookie",
};

/**
 * The problems the API's refusal points at, each at the form's field: an unknown API at the API
 * field, a 400's violations at theirs. The whole answer is also shown as written (ErrorBox).
 */
function refusalProblems(error: unknown): Problem[] {
  if (!(error instanceof ApiError)) return [];
  if (error.type.endsWith("/api_not_found")) {
    return [{ field: "apiId", message: `API: ${error.detail} Pick one of this workspace's APIs.` }];
  }
  return error.errors.flatMap((v) => {
    const field = fieldOfLocation(v.location);
    return field === undefined ? [] : [{ field, message: v.message }];
  });
}

/**
 * A policy as a form: its name and API, the requests it covers (host and path rows, methods), where
 * the key is and how it is verified (permissions, cost, rate-limit rows, tags), what the upstream is
 * told, stripping and dry run. Checked before it is sent (policy-form.ts), each problem at its field.
 */
export function PolicyEditor({
  editing,
  onSaved,
  onCancel,
}: {
  editing: StoredPolicy | "new";
  onSaved(): void;
  onCancel(): void;
}) {
  const [form, setForm] = useState<PolicyForm>(() => formOf(editing === "new" ? undefined : editing.policy));
  const [isDefault, setIsDefault] = useState(editing !== "new" && editing.default);
  const [checked, setChecked] = useState<Problem[]>([]);
  const save = useAction();
  const apis = useLoad(apiChoices, []);
  const set = (patch: Partial<PolicyForm>) => setForm((f) => ({ ...f, ...patch }));

  const problems = [...checked, ...refusalProblems(save.error)];
  const problemOf = (field: string) => {
    const p = problems.find((x) => x.field === field);
    return p && { id: `${fieldId(field)}-error`, message: p.message };
  };
  /** The control's id and, when the field has a problem, its state and the message that says it. */
  const control = (field: string) => {
    const p = problemOf(field);
    return {
      id: fieldId(field),
      ...(p ? { "aria-invalid": "true" as const, "aria-describedby": p.id } : {}),
    };
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    save.clear();
    const found = problemsOf(form, isDefault);
    setChecked(found);
    if (found.length > 0) {
      document.getElementById(fieldId(found[0]!.field))?.focus();
      return;
    }
    const policy = policyOf(form, isDefault);
    const done = await save.run(() =>
      editing === "new"
        ? call("forwardAuth.createPolicy", { policy, ...(isDefault ? { default: true } : {}) })
        : call("forwardAuth.updatePolicy", { policyId: editing.policyId, policy }),
    );
    if (done) onSaved();
  };

  const setRows = (field: "hosts" | "paths", rows: string[]) => set({ [field]: rows });
  const setLimit = (i: number, patch: Partial<LimitRow>) =>
    set({ ratelimits: form.ratelimits.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  const title = editing === "new" ? "Create a policy" : `Edit ${editing.policy.name}`;

  return (
    <form class="card form" onSubmit={submit} noValidate aria-label={title}>
      <h2>{title}</h2>
      {checked.length > 0 && (
        <div class="error" role="alert">
          <p>
            <strong>Check {checked.length === 1 ? "this field" : "these fields"} before saving:</strong>
          </p>
          <ul>
            {checked.map((p) => (
              <li key={p.field}>{p.message}</li>
            ))}
          </ul>
        </div>
      )}
      <div class="grid2">
        <Field
          label="Name"
          hint="1 to 64 of a-z A-Z 0-9 _ . : -; in forward_auth.<name>.verify"
          error={problemOf("name")}
        >
          <input
            {...control("name")}
            value={form.name}
            maxLength={64}
            autoComplete="off"
            onInput={(e) => set({ name: e.currentTarget.value })}
          />
        </Field>
        <Field label="API" hint="The id of the API whose keys it verifies" error={problemOf("apiId")}>
          <input
            {...control("apiId")}
            class="mono"
            list="policy-api-choices"
            value={form.apiId}
            autoComplete="off"
            onInput={(e) => set({ apiId: e.currentTarget.value })}
          />
        </Field>
        <datalist id="policy-api-choices">
          {(apis.data ?? []).map((a) => (
            <option key={a.id} value={a.id}>
              {a.name}
            </option>
          ))}
        </datalist>
      </div>
      {editing === "new" ? (
        <label class="check">
          <input
            type="checkbox"
            checked={isDefault}
            onChange={(e) => setIsDefault(e.currentTarget.checked)}
          />{" "}
          The default: covers what no other policy matches (no hosts, paths or methods)
        </label>
      ) : (
        isDefault && <p class="muted">The default: it covers what no other policy matches.</p>
      )}
      {!isDefault && (
        <fieldset>
          <legend>Requests it covers</legend>
          <p class="muted small">
            All of hosts, paths and methods must match; none of one kind: any. The first policy that matches
            wins.
          </p>
          <div class="grid2">
            <Rows
              legend="Hosts"
              singular="Host"
              field="host"
              hint="api.example.com, or *.example.com for one or more labels before it"
              rows={form.hosts}
              onChange={(rows) => setRows("hosts", rows)}
              control={control}
              problemOf={problemOf}
            />
            <Rows
              legend="Paths"
              singular="Path"
              field="path"
              hint="/v1/orders/**: * is one segment, a trailing /** the rest"
              rows={form.paths}
              onChange={(rows) => setRows("paths", rows)}
              control={control}
              problemOf={problemOf}
            />
          </div>
          <fieldset>
            <legend>Methods</legend>
            {METHODS.map((m) => (
              <label class="inline" key={m}>
                <input
                  type="checkbox"
                  checked={form.methods.includes(m)}
                  onChange={(e) =>
                    set({
                      methods: e.currentTarget.checked
                        ? METHODS.filter((x) => x === m || form.methods.includes(x))
                        : form.methods.filter((x) => x !== m),
                    })
                  }
                />{" "}
                {m}
              </label>
            ))}
            <Field
              label="Other methods"
              hint="In capitals, separated by commas; none ticked or named: any method"
              error={problemOf("otherMethods")}
            >
              <input
                {...control("otherMethods")}
                value={form.otherMethods}
                onInput={(e) => set({ otherMethods: e.currentTarget.value })}
              />
            </Field>
          </fieldset>
        </fieldset>
      )}
      <fieldset>
        <legend>How the key is verified</legend>
        <div class="grid2">
          <Field label="Key from" error={problemOf("keyFrom")}>
            <select
              {...control("keyFrom")}
              value={form.keyFrom}
              onChange={(e) => set({ keyFrom: e.currentTarget.value as KeyFrom })}
            >
              {KEY_FROM.map((k) => (
                <option key={k} value={k}>
                  {KEY_FROM_LABEL[k]}
                </option>
              ))}
            </select>
          </Field>
          {form.keyFrom !== "bearer" && (
            <Field
              label="Key name"
              hint={`The ${form.keyFrom}'s name, e.g. X-API-Key`}
              error={problemOf("keyName")}
            >
              <input
                {...control("keyName")}
                value={form.keyName}
                onInput={(e) => set({ keyName: e.currentTarget.value })}
              />
            </Field>
          )}
          <Field
            label="Permissions"
            hint="keys.verifyKey's permission query, e.g. orders.read OR orders.*; empty: none asked"
            error={problemOf("permissions")}
          >
            <input
              {...control("permissions")}
              value={form.permissions}
              onInput={(e) => set({ permissions: e.currentTarget.value })}
            />
          </Field>
          <Field
            label="Cost"
            hint="Credits each request spends; empty: 1, 0: checked without spending"
            error={problemOf("cost")}
          >
            <input
              {...control("cost")}
              type="number"
              min={0}
              value={form.cost}
              onInput={(e) => set({ cost: e.currentTarget.value })}
            />
          </Field>
          <Field
            label="Tags"
            hint="Analytics tags, separated by commas, e.g. route=orders"
            error={problemOf("tags")}
          >
            <input
              {...control("tags")}
              value={form.tags}
              onInput={(e) => set({ tags: e.currentTarget.value })}
            />
          </Field>
        </div>
        <fieldset class="limits">
          <legend>Rate limits</legend>
          <p class="muted small">
            Named limits of the key or its identity, as keys.verifyKey takes them; a limit and duration given
            here override the stored ones.
          </p>
          {form.ratelimits.length === 0 && <p class="muted small">None.</p>}
          {form.ratelimits.map((r, i) => (
            <div class="row wrap limit" key={i}>
              <label class="inline">
                Name<span class="sr-only"> of rate limit {i + 1}</span>{" "}
                <input
                  {...control(`ratelimit-${i}-name`)}
                  value={r.name}
                  onInput={(e) => setLimit(i, { name: e.currentTarget.value })}
                />
              </label>
              {(["cost", "limit", "duration"] as const).map((part) => (
                <label class="inline" key={part}>
                  {part === "duration" ? "Duration (ms)" : part === "cost" ? "Cost" : "Limit"}
                  <span class="sr-only"> of rate limit {i + 1}</span>{" "}
                  <input
                    {...control(`ratelimit-${i}-${part}`)}
                    type="number"
                    min={0}
                    value={r[part]}
                    onInput={(e) => setLimit(i, { [part]: e.currentTarget.value })}
                  />
                </label>
              ))}
              <button
                type="button"
                onClick={() => set({ ratelimits: form.ratelimits.filter((_, j) => j !== i) })}
              >
                Remove<span class="sr-only"> rate limit {i + 1}</span>
              </button>
              {(["name", "cost", "limit", "duration"] as const).map((part) => (
                <FieldError key={part} error={problemOf(`ratelimit-${i}-${part}`)} />
              ))}
            </div>
          ))}
          <FieldError error={problemOf("ratelimits")} />
          <button
            type="button"
            onClick={() =>
              set({
                ratelimits: [...form.ratelimits, { name: "requests", cost: "1", limit: "", duration: "" }],
              })
            }
          >
            Add a rate limit
          </button>
        </fieldset>
      </fieldset>
      <fieldset>
        <legend>What the upstream is told</legend>
        <label class="check">
          <input
            type="checkbox"
            checked={form.upstreamIdentity}
            onChange={(e) => set({ upstreamIdentity: e.currentTarget.checked })}
          />{" "}
          The key's identity (X-Latchkey-Identity)
        </label>
        <label class="check">
          <input
            type="checkbox"
            checked={form.upstreamCredits}
            onChange={(e) => set({ upstreamCredits: e.currentTarget.checked })}
          />{" "}
          The credits left (X-Latchkey-Credits)
        </label>
        <Field
          label="Meta fields"
          hint="Fields of the key's meta, separated by commas: X-Latchkey-Meta-<field>"
          error={problemOf("upstreamMeta")}
        >
          <input
            {...control("upstreamMeta")}
            value={form.upstreamMeta}
            onInput={(e) => set({ upstreamMeta: e.currentTarget.value })}
          />
        </Field>
        <label class="check">
          <input
            {...control("stripKey")}
            type="checkbox"
            checked={form.stripKey}
            onChange={(e) => set({ stripKey: e.currentTarget.checked })}
          />{" "}
          Strip the key: the upstream never sees it (a bearer or header key)
        </label>
        <FieldError error={problemOf("stripKey")} />
      </fieldset>
      <label class="check">
        <input
          type="checkbox"
          checked={form.dryRun}
          onChange={(e) => set({ dryRun: e.currentTarget.checked })}
        />{" "}
        Dry run: verify and record as always, then let every request through with its verdict
      </label>
      <details>
        <summary>The policy as JSON</summary>
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable block must be reachable by keyboard */}
        <pre class="code" tabIndex={0}>
          {JSON.stringify(policyOf(form, isDefault), null, 2)}
        </pre>
      </details>
      <div class="row">
        <button type="submit" class="primary" disabled={save.busy}>
          {editing === "new" ? "Create policy" : "Save policy"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <ErrorBox error={save.error} />
    </form>
  );
}

/** Rows of one text each (hosts, paths), added and removed; blank rows are left out. */
function Rows({
  legend,
  singular,
  field,
  hint,
  rows,
  onChange,
  control,
  problemOf,
}: {
  legend: string;
  singular: string;
  field: string;
  hint: string;
  rows: string[];
  onChange(rows: string[]): void;
  control(field: string): JSX.HTMLAttributes<HTMLInputElement>;
  problemOf(field: string): { id: string; message: string } | undefined;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      <p class="muted small">{hint}</p>
      {rows.length === 0 && <p class="muted small">None: any {singular.toLowerCase()}.</p>}
      {rows.map((r, i) => (
        <div class="row wrap" key={i}>
          <label class="inline grow">
            {singular} {i + 1}{" "}
            <input
              {...control(`${field}-${i}`)}
              class="mono grow"
              value={r}
              onInput={(e) => onChange(rows.map((x, j) => (j === i ? e.currentTarget.value : x)))}
            />
          </label>
          <button type="button" onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            Remove
            <span class="sr-only">
              {" "}
              {singular.toLowerCase()} {i + 1}
            </span>
          </button>
          <FieldError error={problemOf(`${field}-${i}`)} />
        </div>
      ))}
      <FieldError error={problemOf(`${field}s`)} />
      <button type="button" onClick={() => onChange([...rows, ""])}>
        Add a {singular.toLowerCase()}
      </button>
    </fieldset>
  );
}
