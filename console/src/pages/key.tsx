import { useState } from "preact/hooks";
import { AllowListEditor } from "../allow-list-editor.tsx";
import { type Credits, call, type Key, type Ratelimit } from "../api.ts";
import { VerificationsChart } from "../chart.tsx";
import { LimitsEditor, limitBody } from "../limits-editor.tsx";
import { go, href } from "../router.ts";
import {
  Confirm,
  CopyButton,
  duration,
  ErrorBox,
  Field,
  Loading,
  list,
  NewKey,
  NumberField,
  parseMeta,
  type Refill,
  RefillField,
  useAction,
  useLoad,
  when,
} from "../ui.tsx";
import { KeyBadges } from "./api.tsx";
import { CreditThresholdsCard } from "./credit-thresholds.tsx";

export function KeyPage({ apiId, keyId }: { apiId: string; keyId: string }) {
  const key = useLoad(async () => (await call<Key>("keys.getKey", { keyId })).data, [keyId]);
  const k = key.data;
  return (
    <>
      <p class="crumbs">
        <a href={href("apis")}>APIs</a> / <a href={href("apis", apiId)}>{apiId}</a> /
      </p>
      <h1>
        {k?.name ?? keyId} {k && <KeyBadges k={k} now={Date.now()} />}
      </h1>
      {key.loading && !k ? <Loading what="the key" /> : null}
      <ErrorBox error={key.error} />
      {k && (
        <>
          <Details k={k} />
          <VerificationsChart title="Verifications of this key" filter={{ keyId: k.keyId }} />
          <EnabledCard k={k} onChanged={key.reload} />
          <CreditsCard k={k} onChanged={key.reload} />
          <CreditThresholdsCard k={k} onChanged={key.reload} />
          <ExpiryCard k={k} onChanged={key.reload} />
          <FieldsCard k={k} onChanged={key.reload} />
          <LimitsCard k={k} onChanged={key.reload} />
          <AllowListCard k={k} onChanged={key.reload} />
          <RolesCard k={k} onChanged={key.reload} />
          <RerollCard apiId={apiId} k={k} />
          <RecoverCard k={k} />
          <DeleteCard apiId={apiId} k={k} />
        </>
      )}
    </>
  );
}

type Props = { k: Key; onChanged(): void };

function Details({ k }: { k: Key }) {
  const expired = k.expires !== undefined && k.expires <= Date.now();
  return (
    <section class="card" aria-labelledby="details-title">
      <h2 id="details-title">Details</h2>
      <dl class="details">
        <dt>Key id</dt>
        <dd>
          <code>{k.keyId}</code>
        </dd>
        <dt>Starts with</dt>
        <dd>
          <code>{k.start ?? "—"}</code>
        </dd>
        <dt>State</dt>
        <dd data-testid="key-state">{!k.enabled ? "disabled" : expired ? "expired" : "enabled"}</dd>
        <dt>Credits</dt>
        <dd data-testid="key-credits">{creditsText(k.credits)}</dd>
        <dt>Expires</dt>
        <dd>{k.expires === undefined ? "never" : when(k.expires)}</dd>
        <dt>External id</dt>
        <dd>
          {k.identity ? <a href={href("identities", k.identity.externalId)}>{k.identity.externalId}</a> : "—"}
        </dd>
        <dt>Created</dt>
        <dd>{when(k.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{when(k.updatedAt)}</dd>
        <dt>Last used</dt>
        <dd>{when(k.lastUsedAt)}</dd>
        <dt>Meta</dt>
        <dd>{k.meta ? <code class="wrap">{JSON.stringify(k.meta)}</code> : "—"}</dd>
      </dl>
      <p>
        <a href={`${href("audit")}?resourceId=${encodeURIComponent(k.keyId)}`}>Its audit log</a>
      </p>
    </section>
  );
}

function creditsText(c: Credits | undefined): string {
  if (!c || c.remaining === null) return "unlimited";
  const refill = c.refill
    ? `, refilled to ${c.refill.amount} ${c.refill.interval}${c.refill.interval === "monthly" ? ` on day ${c.refill.refillDay ?? 1}` : ""}`
    : "";
  return `${c.remaining} remaining${refill}`;
}

function EnabledCard({ k, onChanged }: Props) {
  const act = useAction();
  const toggle = async () => {
    if (await act.run(() => call("keys.updateKey", { keyId: k.keyId, enabled: !k.enabled }))) onChanged();
  };
  return (
    <section class="card row wrap between" aria-label="Enabled">
      <p>
        This key is <strong>{k.enabled ? "enabled" : "disabled"}</strong>
        {k.enabled ? "." : ": every verification of it fails with DISABLED."}
      </p>
      <button type="button" onClick={toggle} disabled={act.busy}>
        {k.enabled ? "Disable key" : "Enable key"}
      </button>
      <ErrorBox error={act.error} />
    </section>
  );
}

function CreditsCard({ k, onChanged }: Props) {
  const [operation, setOperation] = useState<"set" | "increment" | "decrement">("set");
  const [value, setValue] = useState("");
  const [refill, setRefill] = useState<Refill>(k.credits?.refill?.interval ?? "");
  const [amount, setAmount] = useState(String(k.credits?.refill?.amount ?? ""));
  const act = useAction();
  const update = async (e: Event) => {
    e.preventDefault();
    const done = await act.run(() =>
      call("keys.updateCredits", { keyId: k.keyId, operation, value: Number(value) }),
    );
    if (done) {
      setValue("");
      onChanged();
    }
  };
  const unlimited = async () => {
    if (await act.run(() => call("keys.updateKey", { keyId: k.keyId, credits: null }))) onChanged();
  };
  const saveRefill = async () => {
    const body = refill ? { interval: refill, amount: Number(amount) } : null;
    if (await act.run(() => call("keys.updateKey", { keyId: k.keyId, credits: { refill: body } })))
      onChanged();
  };
  return (
    <section class="card" aria-labelledby="credits-title">
      <h2 id="credits-title">Credits</h2>
      <p>{creditsText(k.credits)}</p>
      <form class="row wrap" onSubmit={update}>
        <Field label="Change">
          <select value={operation} onChange={(e) => setOperation(e.currentTarget.value as typeof operation)}>
            <option value="set">set to</option>
            <option value="increment">add</option>
            <option value="decrement">take away</option>
          </select>
        </Field>
        <NumberField label="Credits" min={0} required value={value} onValue={setValue} />
        <button type="submit" disabled={act.busy}>
          Update credits
        </button>
        {k.credits && k.credits.remaining !== null && (
          <button type="button" onClick={unlimited} disabled={act.busy}>
            Make unlimited
          </button>
        )}
      </form>
      {k.credits && k.credits.remaining !== null && (
        <div class="row wrap">
          <RefillField value={refill} onChange={setRefill} />
          {refill && <NumberField label="Refill to" min={1} value={amount} onValue={setAmount} />}
          <button type="button" onClick={saveRefill} disabled={act.busy}>
            Save refill
          </button>
        </div>
      )}
      <ErrorBox error={act.error} />
    </section>
  );
}

/** A datetime-local value for a time in ms, in local time. */
const local = (ms: number) => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
};

function ExpiryCard({ k, onChanged }: Props) {
  const [value, setValue] = useState(k.expires === undefined ? "" : local(k.expires));
  const act = useAction();
  const save = async (expires: number | null) => {
    if (await act.run(() => call("keys.updateKey", { keyId: k.keyId, expires }))) onChanged();
  };
  return (
    <section class="card" aria-labelledby="expiry-title">
      <h2 id="expiry-title">Expiry</h2>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          save(new Date(value).getTime());
        }}
      >
        <Field label="Expires at">
          <input
            type="datetime-local"
            required
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={act.busy}>
          Save expiry
        </button>
        {k.expires !== undefined && (
          <button type="button" onClick={() => save(null)} disabled={act.busy}>
            Never expire
          </button>
        )}
      </form>
      <ErrorBox error={act.error} />
    </section>
  );
}

/** The key's IP allow-list, one CIDR or address a line; an empty list lets every address verify it. */
function AllowListCard({ k, onChanged }: Props) {
  return (
    <AllowListEditor
      id="allow-list-title"
      title="IP allow-list"
      about="Addresses and CIDRs (IPv4, IPv6), one a line. When a verification gives the client's address, one outside this list (and the API's and the identity's) is refused with FORBIDDEN_IP. Empty: any address."
      current={k.ipAllowList}
      save={async (ipAllowList) => {
        await call("keys.updateKey", { keyId: k.keyId, ipAllowList });
        onChanged();
        return true;
      }}
    />
  );
}

function FieldsCard({ k, onChanged }: Props) {
  const [name, setName] = useState(k.name ?? "");
  const [externalId, setExternalId] = useState(k.identity?.externalId ?? "");
  const [meta, setMeta] = useState(k.meta ? JSON.stringify(k.meta, null, 2) : "");
  const act = useAction();
  const save = async (e: Event) => {
    e.preventDefault();
    const done = await act.run(() =>
      call("keys.updateKey", {
        keyId: k.keyId,
        name: name.trim() || null,
        externalId: externalId.trim() || null,
        meta: parseMeta(meta) ?? null,
      }),
    );
    if (done) onChanged();
  };
  return (
    <form class="card" onSubmit={save} aria-labelledby="fields-title">
      <h2 id="fields-title">Name, owner and meta</h2>
      <div class="grid2">
        <Field label="Name">
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="External id">
          <input value={externalId} onInput={(e) => setExternalId(e.currentTarget.value)} />
        </Field>
      </div>
      <Field label="Meta (JSON object)">
        <textarea rows={3} class="mono" value={meta} onInput={(e) => setMeta(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={act.busy}>
        Save
      </button>
      <ErrorBox error={act.error} />
    </form>
  );
}

function LimitsCard({ k, onChanged }: Props) {
  const [limits, setLimits] = useState<Ratelimit[]>(k.ratelimits ?? []);
  const act = useAction();
  const save = async (e: Event) => {
    e.preventDefault();
    const done = await act.run(() =>
      call("keys.updateKey", { keyId: k.keyId, ratelimits: limits.map(limitBody) }),
    );
    if (done) onChanged();
  };
  return (
    <form class="card" onSubmit={save} aria-labelledby="limits-title">
      <h2 id="limits-title">Rate limits</h2>
      {(k.ratelimits ?? []).length > 0 && (
        <ul>
          {k.ratelimits!.map((r) => (
            <li key={r.name}>
              <strong>{r.name}</strong>: {r.limit} per {duration(r.duration)}
              {r.autoApply ? ", on every verification" : ", when a verification names it"}
            </li>
          ))}
        </ul>
      )}
      <LimitsEditor value={limits} onChange={setLimits} />
      <button type="submit" disabled={act.busy}>
        Save rate limits
      </button>
      <ErrorBox error={act.error} />
    </form>
  );
}

function RolesCard({ k, onChanged }: Props) {
  const act = useAction();
  const change = async (operation: string, body: Record<string, unknown>, after: () => void) => {
    if (await act.run(() => call(operation, { keyId: k.keyId, ...body }))) {
      after();
      onChanged();
    }
  };
  return (
    <section class="card" aria-labelledby="roles-title">
      <h2 id="roles-title">Roles and permissions</h2>
      <div class="grid2">
        <GrantList
          title="Roles"
          none="No roles."
          items={k.roles ?? []}
          kind="role"
          field="roles"
          operation="Roles"
          label="Add roles"
          hint="Names of existing roles"
          change={change}
        />
        <GrantList
          title="Permissions"
          none="No permissions of its own."
          items={k.permissions ?? []}
          kind="permission"
          field="permissions"
          operation="Permissions"
          label="Add permissions"
          hint="Slugs, e.g. documents.read"
          change={change}
          code
        />
      </div>
      <ErrorBox error={act.error} />
    </section>
  );
}

/** A key's roles or its permissions: each with a remove button, and a form adding more (keys.add…/remove…). */
function GrantList(props: {
  title: string;
  none: string;
  items: string[];
  kind: string;
  field: "roles" | "permissions";
  operation: "Roles" | "Permissions";
  label: string;
  hint: string;
  change: (operation: string, body: Record<string, unknown>, after: () => void) => void;
  code?: boolean;
}) {
  const [value, setValue] = useState("");
  const { title, none, items, kind, field, operation, label, hint, change, code } = props;
  return (
    <div>
      <h3>{title}</h3>
      {items.length === 0 ? (
        <p class="muted">{none}</p>
      ) : (
        <ul class="chips">
          {items.map((item) => (
            <li key={item}>
              {code ? <code>{item}</code> : item}{" "}
              <button
                type="button"
                onClick={() => change(`keys.remove${operation}`, { [field]: [item] }, () => {})}
              >
                Remove
                <span class="sr-only">
                  {" "}
                  {kind} {item}
                </span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          change(`keys.add${operation}`, { [field]: list(value) }, () => setValue(""));
        }}
      >
        <Field label={label} hint={hint}>
          <input required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </Field>
        <button type="submit">{label}</button>
      </form>
    </div>
  );
}

const GRACE = [
  { ms: 0, label: "no grace: the old key stops at once" },
  { ms: 3_600_000, label: "1 hour" },
  { ms: 86_400_000, label: "24 hours" },
  { ms: 7 * 86_400_000, label: "7 days" },
];

function RerollCard({ apiId, k }: { apiId: string; k: Key }) {
  const [grace, setGrace] = useState(3_600_000);
  const act = useAction();
  const [made, setMade] = useState<{ key: string; keyId: string } | undefined>(undefined);
  const reroll = async (e: Event) => {
    e.preventDefault();
    const res = await act.run(() =>
      call<{ key: string; keyId: string }>("keys.rerollKey", { keyId: k.keyId, expiration: grace }),
    );
    if (res) setMade(res.data);
  };
  return (
    <section class="card" aria-labelledby="reroll-title">
      <h2 id="reroll-title">Reroll</h2>
      <p class="muted">
        A new key with this key's settings; this one keeps working for the grace period, then expires.
      </p>
      <form class="row wrap" onSubmit={reroll}>
        <Field label="Grace period">
          <select value={grace} onChange={(e) => setGrace(Number(e.currentTarget.value))}>
            {GRACE.map((g) => (
              <option key={g.ms} value={g.ms}>
                {g.label}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" disabled={act.busy}>
          Reroll key
        </button>
      </form>
      <ErrorBox error={act.error} />
      {made && (
        <NewKey keyText={made.key} keyId={made.keyId} href={href("apis", apiId, "keys", made.keyId)} />
      )}
    </section>
  );
}

function RecoverCard({ k }: { k: Key }) {
  const act = useAction();
  const [plaintext, setPlaintext] = useState<string | null | undefined>(undefined);
  const recover = async () => {
    const res = await act.run(() => call<Key>("keys.getKey", { keyId: k.keyId, decrypt: true }));
    if (res) setPlaintext(res.data.plaintext ?? null);
  };
  return (
    <section class="card" aria-labelledby="recover-title">
      <h2 id="recover-title">Recover</h2>
      <p class="muted">
        Shows the key itself, for a key created recoverable and a root key holding decrypt_key.
      </p>
      <button type="button" onClick={recover} disabled={act.busy}>
        Show the key
      </button>
      <ErrorBox error={act.error} />
      {plaintext === null && <p>This key was not created recoverable: Latchkey keeps only its hash.</p>}
      {plaintext && (
        <div class="row">
          <label class="grow">
            <span class="sr-only">The key</span>
            <input class="mono" readOnly value={plaintext} />
          </label>
          <CopyButton text={plaintext} label="Copy key" />
        </div>
      )}
    </section>
  );
}

function DeleteCard({ apiId, k }: { apiId: string; k: Key }) {
  const [asking, setAsking] = useState(false);
  const [permanent, setPermanent] = useState(false);
  const act = useAction();
  const remove = async () => {
    setAsking(false);
    if (await act.run(() => call("keys.deleteKey", { keyId: k.keyId, permanent }))) go("apis", apiId);
  };
  const label = k.name ?? k.keyId;
  return (
    <section class="card danger-zone" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete</h2>
      <label class="inline">
        <input type="checkbox" checked={permanent} onChange={(e) => setPermanent(e.currentTarget.checked)} />{" "}
        Permanently (also forgets its hash, so the same key string could be imported again)
      </label>
      <button type="button" class="danger" onClick={() => setAsking(true)}>
        Delete key
      </button>
      <ErrorBox error={act.error} />
      <Confirm
        open={asking}
        title={`Delete the key “${label}”?`}
        message={
          <p>
            The key <strong>{label}</strong> (<code>{k.keyId}</code>) stops verifying at once
            {permanent ? " and is removed for good" : ""}. This cannot be undone.
          </p>
        }
        confirm={permanent ? "Delete permanently" : "Delete key"}
        onConfirm={remove}
        onCancel={() => setAsking(false)}
      />
    </section>
  );
}
