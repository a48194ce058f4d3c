import { useState } from "preact/hooks";
import { AllowListEditor } from "../allow-list-editor.tsx";
import { call, type Key } from "../api.ts";
import { VerificationsChart } from "../chart.tsx";
import { href } from "../router.ts";
import { Curl, Empty, ErrorBox, Field, Loading, TableWrap, useLoad, usePages, when } from "../ui.tsx";

const PAGE = 50;

export function ApiPage({ apiId }: { apiId: string }) {
  const api = useLoad(async () => {
    const { data } = await call<{ id: string; name: string; ipAllowList?: string[] }>("apis.getApi", {
      apiId,
    });
    return data;
  }, [apiId]);
  return (
    <>
      <p class="crumbs">
        <a href={href("apis")}>APIs</a> /
      </p>
      <h1>{api.data?.name ?? apiId}</h1>
      <p class="muted">
        API id <code>{apiId}</code>
      </p>
      {api.loading && !api.data ? <Loading what="the API" /> : null}
      <ErrorBox error={api.error} />
      {api.data && (
        <>
          <div class="row wrap">
            <a class="button primary" href={href("apis", apiId, "new-key")}>
              Create a key
            </a>
            <a class="button" href={`${href("analytics")}?apiId=${encodeURIComponent(apiId)}`}>
              Analytics
            </a>
          </div>
          <AllowListEditor
            id="api-allow-list"
            title="IP allow-list of the API"
            about="Applies to every key of this API. When a verification gives the client's address, one outside this list is refused with FORBIDDEN_IP, whatever the key's own list says."
            current={api.data.ipAllowList}
            save={(ipAllowList) => call("apis.updateApi", { apiId, ipAllowList })}
          />
          <Keys apiId={apiId} />
          <VerificationsChart title="Verifications of this API" filter={{ apiId }} />
        </>
      )}
    </>
  );
}

type Tri = "any" | "yes" | "no";

function Keys({ apiId }: { apiId: string }) {
  const [externalId, setExternalId] = useState("");
  const [query, setQuery] = useState("");
  const [search, setSearch] = useState("");
  const [enabled, setEnabled] = useState<Tri>("any");
  const [expired, setExpired] = useState<Tri>("any");
  const [leaked, setLeaked] = useState<Tri>("any");
  const [expiring, setExpiring] = useState<Tri>("any");
  const list = usePages(
    (cursor) =>
      call<Key[]>("apis.listKeys", {
        apiId,
        limit: PAGE,
        ...(cursor ? { cursor } : {}),
        ...(externalId ? { externalId } : {}),
      }),
    [apiId, externalId],
  );
  const keys = list.rows;

  const now = Date.now();
  const needle = search.trim().toLowerCase();
  const shown = keys.filter((k) => {
    if (enabled !== "any" && k.enabled !== (enabled === "yes")) return false;
    const isExpired = k.expires !== undefined && k.expires <= now;
    if (expired !== "any" && isExpired !== (expired === "yes")) return false;
    if (leaked !== "any" && (k.leakedAt !== undefined) !== (leaked === "yes")) return false;
    if (expiring !== "any" && isExpiring(k, now) !== (expiring === "yes")) return false;
    if (!needle) return true;
    return [k.name, k.start, k.keyId].some((v) => v?.toLowerCase().includes(needle));
  });

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">Keys</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setExternalId(query.trim());
        }}
      >
        <Field label="Name, prefix or id">
          <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </Field>
        <Field label="External id">
          <input type="search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        </Field>
        <Field label="Enabled">
          <select value={enabled} onChange={(e) => setEnabled(e.currentTarget.value as Tri)}>
            <option value="any">any</option>
            <option value="yes">enabled</option>
            <option value="no">disabled</option>
          </select>
        </Field>
        <Field label="Expired">
          <select value={expired} onChange={(e) => setExpired(e.currentTarget.value as Tri)}>
            <option value="any">any</option>
            <option value="yes">expired</option>
            <option value="no">not expired</option>
          </select>
        </Field>
        <Field label="Leaked">
          <select value={leaked} onChange={(e) => setLeaked(e.currentTarget.value as Tri)}>
            <option value="any">any</option>
            <option value="yes">reported leaked</option>
            <option value="no">not reported</option>
          </select>
        </Field>
        <Field label="Expiring">
          <select value={expiring} onChange={(e) => setExpiring(e.currentTarget.value as Tri)}>
            <option value="any">any</option>
            <option value="yes">within {EXPIRING_DAYS} days</option>
            <option value="no">not soon</option>
          </select>
        </Field>
        <button type="submit">Search</button>
      </form>
      <p class="muted small">
        The external id is searched by Latchkey; name, prefix, enabled and expired filter the keys loaded here
        ({keys.length}
        {list.hasMore ? ", more to load" : ""}).
      </p>
      <ErrorBox error={list.error} />
      {!list.loaded && <Loading what="keys" />}
      {list.loaded && keys.length === 0 && !list.error && (
        <Empty title={externalId ? `No keys with external id ${externalId}` : "No keys in this API yet"}>
          <p>
            <a href={href("apis", apiId, "new-key")}>Create a key</a>, or with curl:
          </p>
          <Curl operation="keys.createKey" body={{ apiId, prefix: "sk", name: "my first key" }} />
        </Empty>
      )}
      {keys.length > 0 && (
        <TableWrap
          label="Keys"
          columns={["Name", "Starts with", "External id", "State", "Credits", "Created"]}
        >
          {shown.map((k) => (
            <tr key={k.keyId}>
              <td>
                <a href={href("apis", apiId, "keys", k.keyId)}>{k.name ?? k.keyId}</a>
              </td>
              <td>
                <code>{k.start ?? ""}</code>
              </td>
              <td>{k.identity?.externalId ?? "—"}</td>
              <td>
                {state(k, now)} <KeyBadges k={k} now={now} />
              </td>
              <td>{k.credits ? (k.credits.remaining ?? "unlimited") : "unlimited"}</td>
              <td>{when(k.createdAt)}</td>
            </tr>
          ))}
          {shown.length === 0 && (
            <tr>
              <td colSpan={6}>No key loaded here matches these filters.</td>
            </tr>
          )}
        </TableWrap>
      )}
      {list.hasMore && (
        <button type="button" disabled={list.busy} onClick={list.more}>
          Load more keys
        </button>
      )}
    </section>
  );
}

/** What the console calls expiring soon: the default notice period of key.expiring. */
export const EXPIRING_DAYS = 7;

function isExpiring(k: Key, now: number): boolean {
  return k.expires !== undefined && k.expires > now && k.expires - now <= EXPIRING_DAYS * 86_400_000;
}

/** A leaked key's and an expiring key's badges, on the API's list and the key's page. */
export function KeyBadges({ k, now }: { k: Key; now: number }) {
  return (
    <>
      {k.leakedAt !== undefined && (
        <span class="badge danger" title={`A leak report named this key ${when(k.leakedAt)}`}>
          leaked
        </span>
      )}
      {isExpiring(k, now) && (
        <span class="badge warn" title={`It expires ${when(k.expires)}`}>
          expiring
        </span>
      )}
    </>
  );
}

function state(k: Key, now: number): string {
  if (!k.enabled) return "disabled";
  if (k.expires !== undefined && k.expires <= now) return "expired";
  return "enabled";
}
