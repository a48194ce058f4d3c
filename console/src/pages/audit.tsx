import { useEffect, useState } from "preact/hooks";
import { type AuditLog, call } from "../api.ts";
import { href, routeParams } from "../router.ts";
import { Empty, ErrorBox, Field, Loading, TableWrap, useLoad, usePages, when } from "../ui.tsx";

const PAGE = 50;

interface Filter {
  actorId: string;
  resourceId: string;
  operation: string;
  outcome: "" | "success" | "failure";
  /** datetime-local values, in local time; empty: open-ended. */
  start: string;
  end: string;
}

/** The filters as auditLogs.list takes them: only those given. */
function filterBody(f: Filter): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (f.actorId.trim()) body["actorId"] = f.actorId.trim();
  if (f.resourceId.trim()) body["resourceId"] = f.resourceId.trim();
  if (f.operation.trim()) body["operation"] = f.operation.trim();
  if (f.outcome) body["outcome"] = f.outcome;
  if (f.start) body["start"] = new Date(f.start).getTime();
  if (f.end) body["end"] = new Date(f.end).getTime();
  return body;
}

type Resource = AuditLog["resources"][number];

const ACTORS = { cli: "CLI", system: "Latchkey itself" };

/** Where the console shows a resource of an audit record, when it has a page for it. */
function resourceHref(r: Resource, all: Resource[], apiOfKey: Map<string, string>): string | undefined {
  // A refused request that named something by more than an id (a key pasted as keyId, an e-mail) is recorded
  // without it (docs/security.md, The audit log): there is nothing to link to.
  if (r.id === "") return undefined;
  switch (r.type) {
    case "api":
      return href("apis", r.id);
    case "key": {
      // A key's page lives under its API: the record's own API, one another loaded record names with
      // the key, or else #/keys/<id>, which asks the key's records for it.
      const apiId = all.find((o) => o.type === "api")?.id ?? apiOfKey.get(r.id);
      return apiId ? href("apis", apiId, "keys", r.id) : href("keys", r.id);
    }
    case "identity":
      return href("identities", r.id);
    case "webhook":
      return href("webhooks", r.id);
    case "delivery": {
      // A delivery is listed on its webhook's page.
      const webhook = all.find((o) => o.type === "webhook");
      return webhook ? href("webhooks", webhook.id) : undefined;
    }
    case "namespace":
      return href("ratelimits", r.id);
    case "permission":
    case "role":
      return href("permissions");
    default:
      return undefined;
  }
}

/** The API of each key that a record names together with one (createKey, migrateKeys, rerollKey). */
function keysApis(rows: AuditLog[]): Map<string, string> {
  const apis = new Map<string, string>();
  for (const r of rows) {
    const api = r.resources.find((o) => o.type === "api");
    if (api) for (const k of r.resources) if (k.type === "key") apis.set(k.id, api.id);
  }
  return apis;
}

/**
 * #/keys/<keyId>: Latchkey's keys.getKey does not say a key's API, and a key's page lives under it, so
 * the key's audit records are asked: the one that created it names its API.
 */
export function KeyByIdPage({ keyId }: { keyId: string }) {
  const found = useLoad(async () => {
    let cursor: string | undefined;
    for (;;) {
      const res = await call<AuditLog[]>("auditLogs.list", {
        resourceId: keyId,
        limit: 100,
        ...(cursor ? { cursor } : {}),
      });
      const apiId = keysApis(res.data).get(keyId);
      if (apiId) return apiId;
      if (!res.pagination?.hasMore || !res.pagination.cursor) return null;
      cursor = res.pagination.cursor;
    }
  }, [keyId]);
  useEffect(() => {
    if (found.data) location.replace(href("apis", found.data, "keys", keyId));
  }, [found.data]);
  return (
    <>
      <h1>{keyId}</h1>
      {found.loading ? <Loading what="the key's API" /> : null}
      <ErrorBox error={found.error} />
      {found.data === null && (
        <Empty title="The console cannot tell this key's API">
          <p>
            No audit record names the API of <code>{keyId}</code> (it may be older than the records kept).{" "}
            <a href={`${href("audit")}?resourceId=${encodeURIComponent(keyId)}`}>Its audit log</a>
          </p>
        </Empty>
      )}
    </>
  );
}

export function AuditPage() {
  const params = routeParams();
  const initial: Filter = {
    actorId: params.get("actorId") ?? "",
    resourceId: params.get("resourceId") ?? "",
    operation: params.get("operation") ?? "",
    outcome: (params.get("outcome") as Filter["outcome"] | null) ?? "",
    start: "",
    end: "",
  };
  const [form, setForm] = useState<Filter>(initial);
  const [applied, setApplied] = useState<Filter>(initial);
  // The operations this Latchkey has, from its OpenAPI document, to suggest in the operation filter.
  const operations = useLoad(async () => {
    const res = await fetch("/openapi.json", { credentials: "omit" });
    const doc = (await res.json()) as { paths?: Record<string, unknown> };
    return Object.keys(doc.paths ?? {})
      .filter((p) => p.startsWith("/v2/"))
      .map((p) => p.slice(4))
      .sort();
  }, []);

  const list = usePages(
    (cursor) =>
      call<AuditLog[]>("auditLogs.list", {
        limit: PAGE,
        ...(cursor ? { cursor } : {}),
        ...filterBody(applied),
      }),
    [applied],
  );
  const rows = list.rows;
  const apiOfKey = keysApis(rows);

  const set = (patch: Partial<Filter>) => setForm((f) => ({ ...f, ...patch }));
  const filtered = Object.keys(filterBody(applied)).length > 0;

  return (
    <>
      <h1>Audit log</h1>
      <p class="muted">
        Every change, newest first: who made it (a root key, the CLI, or Latchkey itself when it disables a
        failing webhook), the operation, the resources it touched, how it ended and which fields it changed.
        Never a key, a secret or a meta value.
      </p>
      <form
        class="filters"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ ...form });
        }}
      >
        <Field label="Actor id">
          <input
            type="search"
            spellcheck={false}
            value={form.actorId}
            onInput={(e) => set({ actorId: e.currentTarget.value })}
          />
        </Field>
        <Field label="Resource id">
          <input
            type="search"
            spellcheck={false}
            value={form.resourceId}
            onInput={(e) => set({ resourceId: e.currentTarget.value })}
          />
        </Field>
        <Field label="Operation">
          <input
            type="search"
            spellcheck={false}
            list="audit-operations"
            value={form.operation}
            onInput={(e) => set({ operation: e.currentTarget.value })}
          />
        </Field>
        <datalist id="audit-operations">
          {(operations.data ?? []).map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
        <Field label="Outcome">
          <select
            value={form.outcome}
            onChange={(e) => set({ outcome: e.currentTarget.value as Filter["outcome"] })}
          >
            <option value="">any</option>
            <option value="success">success</option>
            <option value="failure">failure</option>
          </select>
        </Field>
        <Field label="From">
          <input
            type="datetime-local"
            value={form.start}
            onInput={(e) => set({ start: e.currentTarget.value })}
          />
        </Field>
        <Field label="To">
          <input
            type="datetime-local"
            value={form.end}
            onInput={(e) => set({ end: e.currentTarget.value })}
          />
        </Field>
        <button type="submit">Filter</button>
        {filtered && (
          <button
            type="button"
            onClick={() => {
              const none: Filter = {
                actorId: "",
                resourceId: "",
                operation: "",
                outcome: "",
                start: "",
                end: "",
              };
              setForm(none);
              setApplied(none);
            }}
          >
            Clear filters
          </button>
        )}
      </form>
      <ErrorBox error={list.error} />
      {!list.loaded && <Loading what="the audit log" />}
      {list.loaded && rows.length === 0 && !list.error && (
        <Empty title={filtered ? "No record matches these filters" : "No records yet"}>
          <p>Records appear here as soon as a root key or the CLI changes something.</p>
        </Empty>
      )}
      {rows.length > 0 && (
        <>
          <p class="muted small" data-testid="audit-count">
            {rows.length} {rows.length === 1 ? "record" : "records"}
            {list.hasMore ? ", more to load" : ""}
          </p>
          <TableWrap
            label="Audit log"
            columns={["Time", "Actor", "Operation", "Resources", "Outcome", "Request id", "Changed fields"]}
          >
            {rows.map((r) => (
              <tr key={r.auditLogId}>
                <td class="nowrap">
                  <time dateTime={new Date(r.time).toISOString()}>{when(r.time)}</time>
                </td>
                <td>
                  {r.actor.type === "root_key" ? (
                    <>
                      root key <code class="nowrap">{r.actor.id}</code>
                    </>
                  ) : (
                    ACTORS[r.actor.type]
                  )}
                </td>
                <td>
                  <code class="nowrap">{r.operation}</code>
                </td>
                <td>
                  <ul class="plain">
                    {r.resources.map((res) => {
                      const to = resourceHref(res, r.resources, apiOfKey);
                      return (
                        <li key={`${res.type}:${res.id}`}>
                          {res.type}{" "}
                          {res.id === "" ? (
                            <span class="muted">(not recorded)</span>
                          ) : to ? (
                            <a href={to}>{res.id}</a>
                          ) : (
                            <code>{res.id}</code>
                          )}
                        </li>
                      );
                    })}
                  </ul>
                </td>
                <td>
                  {r.outcome === "success" ? (
                    <span class="ok">success</span>
                  ) : (
                    <span class="denied">failure{r.error ? <code>: {r.error.code}</code> : null}</span>
                  )}
                </td>
                <td>{r.requestId ? <code>{r.requestId}</code> : "—"}</td>
                <td>{r.fields.length > 0 ? r.fields.join(", ") : "—"}</td>
              </tr>
            ))}
          </TableWrap>
        </>
      )}
      {list.hasMore && (
        <button type="button" disabled={list.busy} onClick={list.more}>
          Load more records
        </button>
      )}
    </>
  );
}
