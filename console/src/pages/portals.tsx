import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { allApis } from "../known.ts";
import { go, href } from "../router.ts";
import {
  Confirm,
  Curl,
  Empty,
  ErrorBox,
  Field,
  Loading,
  NumberField,
  TableWrap,
  useAction,
  useLoad,
  usePages,
  when,
} from "../ui.tsx";

/** A portal as portals.getPortal and portals.listPortals answer it (docs/portal.md). */
export interface Portal {
  portalId: string;
  apiId: string;
  name: string;
  slug?: string;
  branding: { title?: string; accentColor?: string; logoUrl?: string };
  sessionTtlMs: number;
  createdAt: number;
  updatedAt: number;
}

const PAGE = 50;
const SCOPES = [
  { id: "keys:read", label: "See their keys (keys:read)" },
  { id: "keys:create", label: "Create keys (keys:create)" },
  { id: "keys:reroll", label: "Reroll keys (keys:reroll)" },
  { id: "analytics:read", label: "See each key's usage (analytics:read)" },
] as const;

/** A session lifetime as people say it: "24 hours", "90 minutes". */
export function lifetime(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes % 60 === 0) return `${minutes / 60} hour${minutes === 60 ? "" : "s"}`;
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

export function PortalsPage() {
  const list = usePages(
    (cursor) => call<Portal[]>("portals.listPortals", { limit: PAGE, ...(cursor ? { cursor } : {}) }),
    [],
  );
  return (
    <>
      <h1>Portals</h1>
      <p class="muted">
        A portal is a page where your users manage their own keys of one API: your backend calls{" "}
        <code>portal.createSession</code> for a user and sends them to the URL it answers. Each portal has its
        title, colour and logo, and its sessions' lifetime.
      </p>
      <ErrorBox error={list.error} />
      {!list.loaded && <Loading what="portals" />}
      {list.loaded && list.rows.length === 0 && !list.error && (
        <Empty title="No portals yet">
          <p>Create one below, or with curl:</p>
          <Curl operation="portals.createPortal" body={{ apiId: "api_…", name: "Customers" }} />
        </Empty>
      )}
      {list.rows.length > 0 && (
        <TableWrap label="Portals" columns={["Name", "Slug", "API", "Sessions last", "Created"]}>
          {list.rows.map((p) => (
            <tr key={p.portalId}>
              <td>
                <a href={href("portals", p.portalId)}>{p.name}</a>
                <div class="muted small">
                  <code>{p.portalId}</code>
                </div>
              </td>
              <td>{p.slug ? <code>{p.slug}</code> : "—"}</td>
              <td>
                <a href={href("apis", p.apiId)}>
                  <code>{p.apiId}</code>
                </a>
              </td>
              <td>{lifetime(p.sessionTtlMs)}</td>
              <td>{when(p.createdAt)}</td>
            </tr>
          ))}
        </TableWrap>
      )}
      {list.hasMore && (
        <button type="button" disabled={list.busy} onClick={list.more}>
          Load more portals
        </button>
      )}
      <CreatePortal />
    </>
  );
}

/** The fields of a portal that create and edit share, kept as the text typed. */
interface Draft {
  name: string;
  slug: string;
  title: string;
  accentColor: string;
  logoUrl: string;
  /** Minutes; empty: the default (24 hours) on create, unchanged on edit. */
  ttlMinutes: string;
}

const draftOf = (p?: Portal): Draft => ({
  name: p?.name ?? "",
  slug: p?.slug ?? "",
  title: p?.branding.title ?? "",
  accentColor: p?.branding.accentColor ?? "",
  logoUrl: p?.branding.logoUrl ?? "",
  ttlMinutes: p ? String(Math.round(p.sessionTtlMs / 60_000)) : "",
});

/** The branding as the API takes it: only the fields given (updatePortal replaces it as a whole). */
function brandingOf(d: Draft) {
  return {
    ...(d.title.trim() ? { title: d.title.trim() } : {}),
    ...(d.accentColor.trim() ? { accentColor: d.accentColor.trim() } : {}),
    ...(d.logoUrl.trim() ? { logoUrl: d.logoUrl.trim() } : {}),
  };
}

function PortalFields({ draft, set }: { draft: Draft; set(next: Partial<Draft>): void }) {
  return (
    <div class="grid2">
      <Field label="Name" hint="For you: the console lists portals by it">
        <input
          required
          maxLength={255}
          value={draft.name}
          onInput={(e) => set({ name: e.currentTarget.value })}
        />
      </Field>
      <Field label="Slug" hint="Optional: names the portal in portal.createSession instead of its id">
        <input
          class="mono"
          maxLength={64}
          pattern="[a-zA-Z0-9_\-]{3,64}"
          spellcheck={false}
          value={draft.slug}
          onInput={(e) => set({ slug: e.currentTarget.value })}
        />
      </Field>
      <Field label="Title" hint="What your users see at the top of the page">
        <input maxLength={100} value={draft.title} onInput={(e) => set({ title: e.currentTarget.value })} />
      </Field>
      <Field label="Accent colour" hint="#rrggbb: the page's band and buttons">
        <input
          class="mono"
          pattern="#[0-9a-fA-F]{6}"
          placeholder="#1d4ed8"
          spellcheck={false}
          value={draft.accentColor}
          onInput={(e) => set({ accentColor: e.currentTarget.value })}
        />
      </Field>
      <Field label="Logo URL" hint="https only; shown beside the title">
        <input
          type="url"
          maxLength={2048}
          placeholder="https://example.com/logo.svg"
          spellcheck={false}
          value={draft.logoUrl}
          onInput={(e) => set({ logoUrl: e.currentTarget.value })}
        />
      </Field>
      <NumberField
        label="Sessions last (minutes)"
        hint="1 to 1440 (24 hours, the default)"
        min={1}
        max={1440}
        step={1}
        value={draft.ttlMinutes}
        onValue={(ttlMinutes) => set({ ttlMinutes })}
      />
    </div>
  );
}

function CreatePortal() {
  // The APIs the root key may read (apis.listApis), offered for the API id.
  const apis = useLoad(allApis, []);
  const [apiId, setApiId] = useState("");
  const [draft, setDraft] = useState<Draft>(draftOf());
  const create = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const made = await create.run(() =>
      call<{ portalId: string }>("portals.createPortal", {
        apiId: apiId.trim(),
        name: draft.name.trim(),
        ...(draft.slug.trim() ? { slug: draft.slug.trim() } : {}),
        branding: brandingOf(draft),
        ...(draft.ttlMinutes.trim() ? { sessionTtlMs: Number(draft.ttlMinutes) * 60_000 } : {}),
      }),
    );
    if (made) go("portals", made.data.portalId);
  };
  return (
    <form class="card form" onSubmit={submit}>
      <h2>Create a portal</h2>
      <Field label="API id" hint="The API whose keys the portal's users see">
        <input
          required
          class="mono"
          list="portal-apis"
          spellcheck={false}
          value={apiId}
          onInput={(e) => setApiId(e.currentTarget.value)}
        />
      </Field>
      <datalist id="portal-apis">
        {(apis.data ?? []).map((a) => (
          <option key={a.apiId} value={a.apiId}>
            {a.name}
          </option>
        ))}
      </datalist>
      <PortalFields draft={draft} set={(next) => setDraft((d) => ({ ...d, ...next }))} />
      <button type="submit" class="primary" disabled={create.busy}>
        Create portal
      </button>
      <ErrorBox error={create.error} />
    </form>
  );
}

export function PortalPage({ portalId }: { portalId: string }) {
  const portal = useLoad(
    () => call<Portal>("portals.getPortal", { portalId }).then((r) => r.data),
    [portalId],
  );
  const remove = useAction();
  const [deleting, setDeleting] = useState(false);
  const p = portal.data;
  const confirmDelete = async () => {
    setDeleting(false);
    const done = await remove.run(() => call("portals.deletePortal", { portalId }));
    if (done) go("portals");
  };
  return (
    <>
      <p class="crumbs">
        <a href={href("portals")}>Portals</a> /
      </p>
      <h1>{p?.name ?? portalId}</h1>
      <ErrorBox error={portal.error} />
      {portal.loading && !p && <Loading what="the portal" />}
      {p && (
        <>
          <section class="card">
            <dl class="details">
              <dt>Id</dt>
              <dd>
                <code>{p.portalId}</code>
              </dd>
              <dt>Slug</dt>
              <dd>{p.slug ? <code>{p.slug}</code> : "—"}</dd>
              <dt>API</dt>
              <dd>
                <a href={href("apis", p.apiId)}>
                  <code>{p.apiId}</code>
                </a>
              </dd>
              <dt>Sessions last</dt>
              <dd>{lifetime(p.sessionTtlMs)}</dd>
              <dt>Created</dt>
              <dd>{when(p.createdAt)}</dd>
              <dt>Changed</dt>
              <dd>{when(p.updatedAt)}</dd>
            </dl>
          </section>
          <Preview portal={p} />
          <EditPortal key={p.updatedAt} portal={p} onSaved={portal.reload} />
          <section class="card danger-zone">
            <h2>Delete the portal</h2>
            <p>Its sessions end at once; the API and its keys stay.</p>
            <button type="button" class="danger" onClick={() => setDeleting(true)}>
              Delete portal
            </button>
            <ErrorBox error={remove.error} />
          </section>
          <Confirm
            open={deleting}
            title={`Delete the portal “${p.name}”?`}
            message={
              <p>
                The portal <strong>{p.name}</strong> (<code>{p.portalId}</code>) is deleted and its sessions
                end at once. The API's keys are not touched.
              </p>
            }
            confirm={`Delete ${p.name}`}
            onConfirm={confirmDelete}
            onCancel={() => setDeleting(false)}
          />
        </>
      )}
    </>
  );
}

function EditPortal({ portal, onSaved }: { portal: Portal; onSaved(): void }) {
  const [draft, setDraft] = useState<Draft>(draftOf(portal));
  const save = useAction();
  const [saved, setSaved] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const slug = draft.slug.trim();
    const done = await save.run(() =>
      call("portals.updatePortal", {
        portalId: portal.portalId,
        name: draft.name.trim(),
        // An emptied slug is removed; an unchanged one is not sent.
        ...(slug !== (portal.slug ?? "") ? { slug: slug === "" ? null : slug } : {}),
        branding: brandingOf(draft),
        ...(draft.ttlMinutes.trim() ? { sessionTtlMs: Number(draft.ttlMinutes) * 60_000 } : {}),
      }),
    );
    if (done) {
      setSaved(true);
      onSaved();
    }
  };
  return (
    <form class="card form" onSubmit={submit}>
      <h2>Name, branding and sessions</h2>
      <PortalFields draft={draft} set={(next) => setDraft((d) => ({ ...d, ...next }))} />
      <p class="muted small">Sessions already open keep the lifetime they were given.</p>
      <button type="submit" class="primary" disabled={save.busy}>
        Save portal
      </button>
      <span role="status" class="muted">
        {saved ? " Saved" : ""}
      </span>
      <ErrorBox error={save.error} />
    </form>
  );
}

/**
 * A preview session: portal.createSession with preview: true for a user the console names, opened in a new
 * tab. The tab is opened on the click (a popup blocker allows that) and sent to the URL once it is known.
 */
function Preview({ portal }: { portal: Portal }) {
  const [externalId, setExternalId] = useState("");
  const [scopes, setScopes] = useState<string[]>(SCOPES.map((s) => s.id));
  const [returnUrl, setReturnUrl] = useState("");
  const [url, setUrl] = useState<string | undefined>(undefined);
  const create = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    setUrl(undefined);
    const tab = window.open("", "_blank");
    const made = await create.run(() =>
      call<{ id: string; url: string }>("portal.createSession", {
        portal: portal.portalId,
        externalId: externalId.trim(),
        scopes,
        preview: true,
        ...(returnUrl.trim() ? { returnUrl: returnUrl.trim() } : {}),
      }),
    );
    if (!made) {
      tab?.close();
      return;
    }
    setUrl(made.data.url);
    if (tab) {
      // The portal's page must not reach back into the console.
      tab.opener = null;
      tab.location.href = made.data.url;
    }
  };
  const toggle = (scope: string, on: boolean) =>
    setScopes((now) => (on ? [...now, scope] : now.filter((s) => s !== scope)));
  return (
    <form class="card form" onSubmit={submit}>
      <h2>Open a preview session</h2>
      <p class="muted">
        See the portal as one of your users does: a session for their external id, marked as a preview. What
        you do in it changes their keys.
      </p>
      <div class="grid2">
        <Field label="External id" hint="The user whose keys the session shows">
          <input
            required
            class="mono"
            spellcheck={false}
            value={externalId}
            onInput={(e) => setExternalId(e.currentTarget.value)}
          />
        </Field>
        <Field label="Return URL" hint="Optional: where the page's return link goes">
          <input
            type="url"
            spellcheck={false}
            value={returnUrl}
            onInput={(e) => setReturnUrl(e.currentTarget.value)}
          />
        </Field>
      </div>
      <fieldset>
        <legend>Scopes</legend>
        <ul class="plain checks">
          {SCOPES.map((s) => (
            <li key={s.id}>
              <label class="check">
                <input
                  type="checkbox"
                  checked={scopes.includes(s.id)}
                  onChange={(e) => toggle(s.id, e.currentTarget.checked)}
                />
                {s.label}
              </label>
            </li>
          ))}
        </ul>
      </fieldset>
      <button type="submit" class="primary" disabled={create.busy}>
        Open preview
      </button>
      <ErrorBox error={create.error} />
      {url && (
        <p role="status">
          Opened in a new tab. If none opened,{" "}
          <a href={url} target="_blank" rel="noopener noreferrer">
            open the preview
          </a>{" "}
          (its link works once, within a minute).
        </p>
      )}
    </form>
  );
}
