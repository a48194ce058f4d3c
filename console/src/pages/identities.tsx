import { useState } from "preact/hooks";
import { AllowListEditor } from "../allow-list-editor.tsx";
import { call, type Identity, type Key, type Pagination, type Ratelimit } from "../api.ts";
import { VerificationsChart } from "../chart.tsx";
import { allApis } from "../known.ts";
import { LimitsEditor, limitBody } from "../limits-editor.tsx";
import { go, href } from "../router.ts";
import {
  Confirm,
  Curl,
  duration,
  Empty,
  ErrorBox,
  Field,
  Loading,
  Pager,
  parseMeta,
  TableWrap,
  useAction,
  useLoad,
} from "../ui.tsx";

export function IdentitiesPage() {
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useLoad(
    () =>
      call<Identity[]>("identities.listIdentities", {
        limit: 50,
        ...(cursor ? { cursor } : {}),
        ...(query ? { search: query } : {}),
      }),
    [cursor, query],
  );
  const [externalId, setExternalId] = useState("");
  const [meta, setMeta] = useState("");
  const [limits, setLimits] = useState<Ratelimit[]>([]);
  const create = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const made = await create.run(() => {
      const m = parseMeta(meta);
      return call("identities.createIdentity", {
        externalId: externalId.trim(),
        ...(m ? { meta: m } : {}),
        ...(limits.length ? { ratelimits: limits.map(limitBody) } : {}),
      });
    });
    if (made) go("identities", externalId.trim());
  };
  const rows = page.data?.data ?? [];
  const pagination: Pagination | undefined = page.data?.pagination;
  return (
    <>
      <h1>Identities</h1>
      <p class="muted">
        An identity is who owns keys in your system (its external id); its rate limits are shared by all its
        keys.
      </p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([]);
          setQuery(search.trim());
        }}
      >
        <Field label="Search by external id">
          <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </Field>
        <button type="submit">Search</button>
      </form>
      {page.loading && !page.data ? <Loading what="identities" /> : null}
      <ErrorBox error={page.error} />
      {page.data && rows.length === 0 && (
        <Empty title={query ? `No identity matches “${query}”` : "No identities yet"}>
          <p>Create one below, or with curl (a key created with an external id makes one too):</p>
          <Curl operation="identities.createIdentity" body={{ externalId: "user_123" }} />
        </Empty>
      )}
      {rows.length > 0 && (
        <TableWrap label="Identities" columns={["External id", "Id", "Rate limits"]}>
          {rows.map((i) => (
            <tr key={i.id}>
              <td>
                <a href={href("identities", i.externalId)}>{i.externalId}</a>
              </td>
              <td>
                <code>{i.id}</code>
              </td>
              <td>
                {(i.ratelimits ?? [])
                  .map((r) => `${r.name}: ${r.limit}/${duration(r.duration)}`)
                  .join(", ") || "—"}
              </td>
            </tr>
          ))}
        </TableWrap>
      )}
      <Pager
        cursors={cursors}
        next={pagination?.hasMore ? pagination.cursor : undefined}
        onChange={setCursors}
      />
      <form class="card" onSubmit={submit}>
        <h2>Create an identity</h2>
        <Field label="External id" hint="Letters, digits, _ . and -">
          <input
            required
            pattern="[a-zA-Z0-9_.\-]+"
            value={externalId}
            onInput={(e) => setExternalId(e.currentTarget.value)}
          />
        </Field>
        <Field label="Meta (JSON object)">
          <textarea rows={2} class="mono" value={meta} onInput={(e) => setMeta(e.currentTarget.value)} />
        </Field>
        <LimitsEditor value={limits} onChange={setLimits} />
        <button type="submit" class="primary" disabled={create.busy}>
          Create identity
        </button>
        <ErrorBox error={create.error} />
      </form>
    </>
  );
}

export function IdentityPage({ identity }: { identity: string }) {
  const loaded = useLoad(
    async () => (await call<Identity>("identities.getIdentity", { identity })).data,
    [identity],
  );
  const i = loaded.data;
  return (
    <>
      <p class="crumbs">
        <a href={href("identities")}>Identities</a> /
      </p>
      <h1>{i?.externalId ?? identity}</h1>
      {loaded.loading && !i ? <Loading what="the identity" /> : null}
      <ErrorBox error={loaded.error} />
      {i && (
        <>
          <p class="muted">
            Identity id <code>{i.id}</code>
          </p>
          <IdentityLimits i={i} onChanged={loaded.reload} />
          <AllowListEditor
            id="identity-allow-list"
            title="IP allow-list of the identity"
            about="Applies to every key of this identity, together with its API's and the key's own lists. When a verification gives the client's address, one outside it is refused with FORBIDDEN_IP."
            current={i.ipAllowList}
            save={(ipAllowList) => call("identities.updateIdentity", { identity: i.id, ipAllowList })}
          />
          <IdentityKeys externalId={i.externalId} />
          <VerificationsChart title="Verifications of this identity's keys" filter={{ identity: i.id }} />
          <DeleteIdentity i={i} />
        </>
      )}
    </>
  );
}

function IdentityLimits({ i, onChanged }: { i: Identity; onChanged(): void }) {
  const [limits, setLimits] = useState<Ratelimit[]>(i.ratelimits ?? []);
  const [meta, setMeta] = useState(i.meta ? JSON.stringify(i.meta, null, 2) : "");
  const act = useAction();
  const save = async (e: Event) => {
    e.preventDefault();
    const done = await act.run(() =>
      call("identities.updateIdentity", {
        identity: i.id,
        meta: parseMeta(meta) ?? {},
        ratelimits: limits.map(limitBody),
      }),
    );
    if (done) onChanged();
  };
  return (
    <form class="card" onSubmit={save} aria-labelledby="identity-limits">
      <h2 id="identity-limits">Rate limits and meta</h2>
      <LimitsEditor value={limits} onChange={setLimits} />
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

/** Keys of this external id in the APIs the root key may read (apis.listKeys filters by externalId). */
function IdentityKeys({ externalId }: { externalId: string }) {
  const keys = useLoad(
    async () =>
      Promise.all(
        (await allApis()).map(async (api) => {
          try {
            const { data } = await call<Key[]>("apis.listKeys", { apiId: api.apiId, externalId, limit: 100 });
            return data.map((k) => ({ api, k }));
          } catch {
            return [];
          }
        }),
      ).then((all) => all.flat()),
    [externalId],
  );
  return (
    <section class="card" aria-labelledby="identity-keys">
      <h2 id="identity-keys">Keys</h2>
      {keys.loading && !keys.data ? <Loading what="keys" /> : null}
      <ErrorBox error={keys.error} />
      {keys.data && keys.data.length === 0 && (
        <p class="muted">No keys with this external id in the APIs your root key may read.</p>
      )}
      {keys.data && keys.data.length > 0 && (
        <ul>
          {keys.data.map(({ api, k }) => (
            <li key={k.keyId}>
              <a href={href("apis", api.apiId, "keys", k.keyId)}>{k.name ?? k.keyId}</a> in {api.name}
              {k.enabled ? "" : " (disabled)"}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function DeleteIdentity({ i }: { i: Identity }) {
  const [asking, setAsking] = useState(false);
  const act = useAction();
  const remove = async () => {
    setAsking(false);
    if (await act.run(() => call("identities.deleteIdentity", { identity: i.id }))) go("identities");
  };
  return (
    <section class="card danger-zone" aria-labelledby="delete-identity">
      <h2 id="delete-identity">Delete</h2>
      <button type="button" class="danger" onClick={() => setAsking(true)}>
        Delete identity
      </button>
      <ErrorBox error={act.error} />
      <Confirm
        open={asking}
        title={`Delete the identity “${i.externalId}”?`}
        message={<p>Its rate limits go with it; its keys stay, without the shared limits.</p>}
        confirm="Delete identity"
        onConfirm={remove}
        onCancel={() => setAsking(false)}
      />
    </section>
  );
}
