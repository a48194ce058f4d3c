import { useState } from "preact/hooks";
import { call, type Ratelimit } from "../api.ts";
import { LimitsEditor, limitBody } from "../limits-editor.tsx";
import { href } from "../router.ts";
import {
  ErrorBox,
  Field,
  list,
  NewKey,
  NumberField,
  parseMeta,
  type Refill,
  RefillField,
  useAction,
} from "../ui.tsx";
import { parseThresholds } from "./credit-thresholds.tsx";

export function CreateKeyPage({ apiId }: { apiId: string }) {
  const [prefix, setPrefix] = useState("");
  const [name, setName] = useState("");
  const [externalId, setExternalId] = useState("");
  const [meta, setMeta] = useState("");
  const [expires, setExpires] = useState("");
  const [credits, setCredits] = useState("");
  const [refill, setRefill] = useState<Refill>("");
  const [refillAmount, setRefillAmount] = useState("");
  const [refillDay, setRefillDay] = useState("");
  const [thresholds, setThresholds] = useState("");
  const [limits, setLimits] = useState<Ratelimit[]>([]);
  const [roles, setRoles] = useState("");
  const [permissions, setPermissions] = useState("");
  const [recoverable, setRecoverable] = useState(false);
  const [enabled, setEnabled] = useState(true);
  const create = useAction();
  const [created, setCreated] = useState<{ key: string; keyId: string } | undefined>(undefined);

  const submit = async (e: Event) => {
    e.preventDefault();
    const res = await create.run(() => {
      const body: Record<string, unknown> = { apiId, enabled };
      if (prefix.trim()) body["prefix"] = prefix.trim();
      if (name.trim()) body["name"] = name.trim();
      if (externalId.trim()) body["externalId"] = externalId.trim();
      const m = parseMeta(meta);
      if (m) body["meta"] = m;
      if (expires) body["expires"] = new Date(expires).getTime();
      if (credits !== "") {
        body["credits"] = {
          remaining: Number(credits),
          ...(refill
            ? {
                refill: {
                  interval: refill,
                  amount: Number(refillAmount || credits),
                  ...(refill === "monthly" && refillDay ? { refillDay: Number(refillDay) } : {}),
                },
              }
            : {}),
        };
      }
      // A word that is no percentage goes as null, and the API's 400 says what to fix.
      if (credits !== "" && thresholds.trim()) body["creditThresholds"] = parseThresholds(thresholds);
      if (limits.length > 0) body["ratelimits"] = limits.map(limitBody);
      if (list(roles).length > 0) body["roles"] = list(roles);
      if (list(permissions).length > 0) body["permissions"] = list(permissions);
      if (recoverable) body["recoverable"] = true;
      return call<{ key: string; keyId: string }>("keys.createKey", body);
    });
    if (res) setCreated(res.data);
  };

  if (created) {
    return (
      <>
        <p class="crumbs">
          <a href={href("apis")}>APIs</a> / <a href={href("apis", apiId)}>{apiId}</a> /
        </p>
        <h1>Key created</h1>
        <NewKey
          keyText={created.key}
          keyId={created.keyId}
          href={href("apis", apiId, "keys", created.keyId)}
        />
        <p>
          <a href={href("apis", apiId)}>Back to the API</a>
        </p>
      </>
    );
  }

  return (
    <>
      <p class="crumbs">
        <a href={href("apis")}>APIs</a> / <a href={href("apis", apiId)}>{apiId}</a> /
      </p>
      <h1>Create a key</h1>
      <form class="card form" onSubmit={submit}>
        <div class="grid2">
          <Field label="Prefix" hint="Starts the key, as in sk_…; letters, digits and _">
            <input
              value={prefix}
              maxLength={16}
              pattern="[a-zA-Z0-9_]+"
              onInput={(e) => setPrefix(e.currentTarget.value)}
            />
          </Field>
          <Field label="Name" hint="For people; never used to verify">
            <input value={name} maxLength={255} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label="External id" hint="Who owns the key in your system: links it to an identity">
            <input
              value={externalId}
              pattern="[a-zA-Z0-9_.\-]+"
              onInput={(e) => setExternalId(e.currentTarget.value)}
            />
          </Field>
          <Field label="Expires" hint="Empty: never">
            <input type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
          </Field>
        </div>
        <Field label="Meta (JSON object)" hint='Returned with every verification, e.g. {"plan": "pro"}'>
          <textarea rows={3} class="mono" value={meta} onInput={(e) => setMeta(e.currentTarget.value)} />
        </Field>
        <fieldset>
          <legend>Credits</legend>
          <div class="grid2">
            <NumberField
              label="Credits"
              hint="Empty: unlimited"
              min={0}
              value={credits}
              onValue={setCredits}
            />
            <RefillField value={refill} onChange={setRefill} />
            {refill && (
              <NumberField
                label="Refill to"
                hint="The balance after each refill"
                min={1}
                value={refillAmount}
                onValue={setRefillAmount}
              />
            )}
            {refill === "monthly" && (
              <NumberField
                label="Refill day"
                hint="1 to 31; clamped to the month's last day"
                min={1}
                max={31}
                value={refillDay}
                onValue={setRefillDay}
              />
            )}
            {credits !== "" && (
              <Field
                label="Credit thresholds (percent)"
                hint="credits.low at each, e.g. 50, 20, 0; empty: the API's"
              >
                <input value={thresholds} onInput={(e) => setThresholds(e.currentTarget.value)} />
              </Field>
            )}
          </div>
        </fieldset>
        <LimitsEditor value={limits} onChange={setLimits} />
        <div class="grid2">
          <Field label="Roles" hint="Names of existing roles, separated by commas">
            <input value={roles} onInput={(e) => setRoles(e.currentTarget.value)} />
          </Field>
          <Field label="Permissions" hint="Slugs, separated by commas, e.g. documents.read">
            <input value={permissions} onInput={(e) => setPermissions(e.currentTarget.value)} />
          </Field>
        </div>
        <label class="inline">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />{" "}
          Enabled
        </label>
        <label class="inline">
          <input
            type="checkbox"
            checked={recoverable}
            onChange={(e) => setRecoverable(e.currentTarget.checked)}
          />{" "}
          Recoverable (stored encrypted, so a root key with decrypt_key can show it again)
        </label>
        <div class="row">
          <button type="submit" class="primary" disabled={create.busy}>
            Create key
          </button>
          <a href={href("apis", apiId)}>Cancel</a>
        </div>
        <ErrorBox error={create.error} />
      </form>
    </>
  );
}
