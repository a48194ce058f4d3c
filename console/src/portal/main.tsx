import { render } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { Confirm, CopyButton, Field } from "../ui.tsx";
import { type Pagination, PortalError, type PortalKey, portalCall, type Session } from "./api.ts";
import * as brand from "./branding.ts";
import { Legend, RANGES, type Range, Usage } from "./usage.tsx";
import "../styles.css";
import "./portal.css";

// The portal web app: portal.createSession's URL opens it with a single-use code, which it trades for the
// session cookie (portal.exchangeCode), then it shows what the session's scopes allow, and nothing else.

/** Why no session is shown, and the return link when the session named one. */
type Ended =
  | { kind: "loading" }
  | { kind: "code-refused"; error: PortalError }
  | { kind: "no-session" }
  | { kind: "ended"; returnUrl?: string }
  | { kind: "signed-out"; returnUrl?: string }
  | { kind: "failed"; error: PortalError };

type State = Ended | { kind: "ready"; session: Session };

const asPortalError = (err: unknown) =>
  err instanceof PortalError ? err : new PortalError(0, "Error", String((err as Error)?.message ?? err));

/**
 * Takes the code from the address (it is single-use: it leaves the address bar and the history at once,
 * taken or not), trades it for the cookie, and reads the session the cookie now names.
 */
async function start(): Promise<State> {
  const params = new URLSearchParams(location.search);
  const code = params.get("code");
  if (code !== null) {
    params.delete("code");
    const rest = params.toString();
    history.replaceState(history.state, "", `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`);
    try {
      await portalCall("exchangeCode", { code });
    } catch (err) {
      const e = asPortalError(err);
      // A session the browser held before is not shown in place of the one the link was for.
      // Too many tries from here (429) or a server's trouble says nothing about the code: shown as it is.
      const refused = e.status >= 400 && e.status < 500 && e.status !== 429;
      return refused ? { kind: "code-refused", error: e } : { kind: "failed", error: e };
    }
  }
  try {
    const { data } = await portalCall<Session>("getSession", {});
    return { kind: "ready", session: data };
  } catch (err) {
    const e = asPortalError(err);
    return e.status === 401 ? { kind: code === null ? "no-session" : "ended" } : { kind: "failed", error: e };
  }
}

function App() {
  const [state, setState] = useState<State>({ kind: "loading" });
  useEffect(() => {
    start().then(setState);
  }, []);
  if (state.kind === "ready") {
    return (
      <PortalPage
        session={state.session}
        onEnded={(kind) => setState({ kind, returnUrl: state.session.returnUrl })}
      />
    );
  }
  return <Notice state={state} />;
}

/** The page without a session: loading, or why there is none, with the return link when there is one. */
function Notice({ state }: { state: Ended }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = "API keys";
    heading.current?.focus();
  }, [state.kind]);
  const back = "returnUrl" in state ? brand.returnUrl(state.returnUrl) : undefined;
  const text: Record<Ended["kind"], [string, string]> = {
    loading: ["Opening your API keys…", ""],
    "code-refused": [
      "This link cannot be used again",
      "A portal link works once, within a minute of being made. Go back to the app that sent you here and open the portal from there again.",
    ],
    "no-session": [
      "No session",
      "Open this page from the app that manages your API keys: it signs you in with a link of its own.",
    ],
    ended: [
      "Your session ended",
      "Sessions last a limited time, and can be ended by the app. Go back to the app and open the portal from there again.",
    ],
    "signed-out": ["You signed out", "Your session has ended. Go back to the app to open the portal again."],
    failed: ["Something went wrong", ""],
  };
  const [title, detail] = text[state.kind];
  return (
    <main id="main" class="portal notice">
      <h1 ref={heading} tabIndex={-1}>
        {title}
      </h1>
      {state.kind === "loading" ? (
        <p class="muted" role="status">
          Loading…
        </p>
      ) : (
        <div role={state.kind === "failed" ? "alert" : "status"}>
          {detail && <p>{detail}</p>}
          {(state.kind === "failed" || state.kind === "code-refused") && (
            <p class="muted small">
              {state.error.status ? `${state.error.status} ${state.error.title}: ` : ""}
              {state.error.detail}
              {state.error.requestId ? ` (request ${state.error.requestId})` : ""}
            </p>
          )}
        </div>
      )}
      {back && (
        <p>
          <a href={back}>Return to the app</a>
        </p>
      )}
    </main>
  );
}

/** The keys page: what the session's scopes allow, under the portal's branding. */
function PortalPage({ session, onEnded }: { session: Session; onEnded(kind: "ended" | "signed-out"): void }) {
  const branding = session.portal.branding ?? {};
  const name = brand.title(branding.title, brand.title(session.portal.name, "API keys"));
  const logo = brand.logoUrl(branding.logoUrl);
  const back = brand.returnUrl(session.returnUrl);
  const scopes = new Set(session.scopes);
  const [logoFailed, setLogoFailed] = useState(false);
  const [range, setRange] = useState<Range>("7d");
  const [round, setRound] = useState(0);
  const [shown, setShown] = useState<{ title: string; key: string; keyId: string } | undefined>(undefined);
  const [signingOut, setSigningOut] = useState(false);
  const [signOutError, setSignOutError] = useState<PortalError | undefined>(undefined);

  useEffect(() => {
    document.title = `${name}: API keys`;
    const accent = brand.accentColor(branding.accentColor) ?? brand.DEFAULT_ACCENT;
    // Through the CSSOM, one property at a time: the CSP allows no inline style, and nothing else is set.
    document.documentElement.style.setProperty("--brand", accent);
    document.documentElement.style.setProperty("--brand-fg", brand.textOn(accent));
  }, [name, branding.accentColor]);

  /** A 401 from any call: the session is gone (expired, ended, revoked). */
  const failed = (err: unknown): PortalError => {
    const e = asPortalError(err);
    if (e.status === 401) onEnded("ended");
    return e;
  };

  const signOut = async () => {
    setSigningOut(true);
    setSignOutError(undefined);
    try {
      await portalCall("endSession", {});
      onEnded("signed-out");
    } catch (err) {
      const e = failed(err);
      if (e.status !== 401) setSignOutError(e);
    } finally {
      setSigningOut(false);
    }
  };

  return (
    <>
      <header class="portal-top">
        <div class="portal-brand">
          {logo && !logoFailed && (
            // The title beside it names the portal: the logo is decoration.
            <img
              src={logo}
              alt=""
              class="logo"
              referrerPolicy="no-referrer"
              onError={() => setLogoFailed(true)}
            />
          )}
          <span class="portal-name" data-testid="portal-title">
            {name}
          </span>
        </div>
        <div class="row wrap portal-actions">
          {back && (
            <a href={back} class="button" data-testid="return-link">
              Return to the app
            </a>
          )}
          <button type="button" onClick={signOut} disabled={signingOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" class="portal">
        {session.preview && (
          <p class="preview" data-testid="preview">
            <strong>Preview.</strong> This is what the user <code>{session.externalId}</code> sees: the keys
            are theirs, and what you do here changes them.
          </p>
        )}
        {signOutError && (
          <p class="error" role="alert">
            Could not sign out: {signOutError.detail}
          </p>
        )}
        <h1>Your API keys</h1>
        <p class="muted small">Signed in until {new Date(session.expiresAt).toLocaleString()}.</p>
        {shown && <ShownKey shown={shown} onDismiss={() => setShown(undefined)} />}
        {scopes.has("keys:read") ? (
          <>
            {scopes.has("analytics:read") && (
              <div class="row wrap between usage-controls">
                <label class="inline">
                  Usage over{" "}
                  <select value={range} onChange={(e) => setRange(e.currentTarget.value as Range)}>
                    {RANGES.map((r) => (
                      <option key={r.id} value={r.id}>
                        {r.label.replace(/^Last /, "the last ")}
                      </option>
                    ))}
                  </select>
                </label>
                <Legend />
              </div>
            )}
            <KeyList
              key={round}
              scopes={scopes}
              range={range}
              failed={failed}
              onEnded={() => onEnded("ended")}
              onNewKey={(title, key, keyId) => {
                setShown({ title, key, keyId });
                setRound((r) => r + 1);
              }}
            />
          </>
        ) : (
          <p>This session does not show your keys.</p>
        )}
        {scopes.has("keys:create") && (
          <CreateKey
            failed={failed}
            onCreated={(key, keyId) => {
              setShown({ title: "Your new key", key, keyId });
              setRound((r) => r + 1);
            }}
          />
        )}
      </main>
    </>
  );
}

/** A new key, shown the one time it can be: with a copy button and the warning; focused when it appears. */
function ShownKey({
  shown,
  onDismiss,
}: {
  shown: { title: string; key: string; keyId: string };
  onDismiss(): void;
}) {
  const id = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [shown.key]);
  return (
    <section class="newkey" aria-labelledby={id} data-testid="shown-key">
      <h2 id={id} ref={heading} tabIndex={-1}>
        {shown.title}
      </h2>
      <p class="warning">
        This is the only time the key is shown. Copy it now and keep it somewhere safe: it cannot be shown
        again.
      </p>
      <div class="row wrap">
        <label class="grow">
          <span class="sr-only">The new key</span>
          <input class="mono" readOnly value={shown.key} data-testid="new-key" />
        </label>
        <CopyButton text={shown.key} label="Copy key" />
      </div>
      <p class="muted small">
        Key id <code>{shown.keyId}</code>
      </p>
      <button type="button" onClick={onDismiss}>
        I have copied it
      </button>
    </section>
  );
}

const PAGE = 50;

/** The session's keys, page by page, each with its usage and its reroll button as the scopes allow. */
function KeyList({
  scopes,
  range,
  failed,
  onEnded,
  onNewKey,
}: {
  scopes: Set<string>;
  range: Range;
  failed(err: unknown): PortalError;
  onEnded(): void;
  onNewKey(title: string, key: string, keyId: string): void;
}) {
  const [keys, setKeys] = useState<PortalKey[]>([]);
  const [next, setNext] = useState<Pagination | undefined>(undefined);
  const [loaded, setLoaded] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<PortalError | undefined>(undefined);
  const [rerolling, setRerolling] = useState<PortalKey | undefined>(undefined);
  const [grace, setGrace] = useState("0");
  const [rerollError, setRerollError] = useState<PortalError | undefined>(undefined);

  const load = async (cursor: string | undefined, before: PortalKey[]) => {
    setBusy(true);
    try {
      const res = await portalCall<PortalKey[]>("listKeys", { limit: PAGE, ...(cursor ? { cursor } : {}) });
      setKeys([...before, ...(Array.isArray(res.data) ? res.data : [])]);
      setNext(res.pagination);
      setError(undefined);
    } catch (err) {
      setError(failed(err));
    } finally {
      setBusy(false);
      setLoaded(true);
    }
  };
  useEffect(() => {
    load(undefined, []);
  }, []);

  const reroll = async () => {
    const key = rerolling!;
    setRerolling(undefined);
    setRerollError(undefined);
    try {
      const { data } = await portalCall<{ keyId: string; key: string }>("rerollKey", {
        keyId: key.keyId,
        expiration: Number(grace),
      });
      onNewKey(`The new key for ${keyLabel(key)}`, data.key, data.keyId);
    } catch (err) {
      setRerollError(failed(err));
    }
  };

  if (!loaded) {
    return (
      <p class="muted" role="status">
        Loading your keys…
      </p>
    );
  }
  return (
    <section aria-label="Your keys">
      {error && (
        <p class="error" role="alert">
          {error.status === 403
            ? "This session may not list keys."
            : `Your keys could not be read: ${error.detail}`}
        </p>
      )}
      {rerollError && (
        <p class="error" role="alert">
          {rerollError.status === 403
            ? "This session may not reroll keys."
            : `The key was not rerolled: ${rerollError.detail}`}
        </p>
      )}
      {!error && keys.length === 0 && <p class="empty">You have no keys yet.</p>}
      <ul class="plain keys">
        {/* Keys that work first: a rerolled key stays listed, expired, until it is gone. */}
        {[...keys]
          .sort((a, b) => Number(status(a) === "expired") - Number(status(b) === "expired"))
          .map((k) => (
            <li key={k.keyId}>
              <KeyCard
                k={k}
                canReroll={scopes.has("keys:reroll") && status(k) !== "expired"}
                showUsage={scopes.has("analytics:read")}
                range={range}
                onReroll={() => {
                  setGrace("0");
                  setRerolling(k);
                }}
                onEnded={onEnded}
              />
            </li>
          ))}
      </ul>
      {next?.hasMore && next.cursor && (
        <button type="button" disabled={busy} onClick={() => load(next.cursor, keys)}>
          Load more keys
        </button>
      )}
      <Confirm
        open={rerolling !== undefined}
        title={`Reroll ${rerolling ? keyLabel(rerolling) : "the key"}?`}
        message={
          <p>
            A new key takes this one's place, with the same settings. It is shown once. Anything using the
            current key must be given the new one.
          </p>
        }
        confirm="Reroll"
        onConfirm={reroll}
        onCancel={() => setRerolling(undefined)}
      >
        <Field label="The current key stops working">
          <select value={grace} onChange={(e) => setGrace(e.currentTarget.value)}>
            <option value="0">at once</option>
            <option value="3600000">in an hour</option>
            <option value="86400000">in a day</option>
            <option value="604800000">in a week</option>
          </select>
        </Field>
      </Confirm>
    </section>
  );
}

const keyLabel = (k: PortalKey) => (k.name?.trim() ? k.name : k.start ? `${k.start}…` : k.keyId);
/** A rerolled key stays listed until its grace ends, and then as expired: the status says which still work. */
const status = (k: PortalKey) =>
  k.enabled === false
    ? "disabled"
    : k.expires !== undefined && k.expires <= Date.now()
      ? "expired"
      : "active";
const when = (ms: number | undefined) => (ms ? new Date(ms).toLocaleString() : "never");

function KeyCard({
  k,
  canReroll,
  showUsage,
  range,
  onReroll,
  onEnded,
}: {
  k: PortalKey;
  canReroll: boolean;
  showUsage: boolean;
  range: Range;
  onReroll(): void;
  onEnded(): void;
}) {
  const id = useId();
  const label = keyLabel(k);
  const credits = k.credits?.remaining;
  return (
    <article class="card key" aria-labelledby={id} data-testid="key" data-key-id={k.keyId}>
      <div class="row wrap between">
        <h2 id={id}>{label}</h2>
        {canReroll && (
          <button type="button" onClick={onReroll}>
            Reroll<span class="sr-only"> {label}</span>
          </button>
        )}
      </div>
      <dl class="details">
        {k.start && (
          <>
            <dt>Starts with</dt>
            <dd>
              <code>{k.start}…</code>
            </dd>
          </>
        )}
        <dt>Key id</dt>
        <dd>
          <code>{k.keyId}</code>
        </dd>
        <dt>Status</dt>
        <dd data-testid="key-status">{status(k)}</dd>
        <dt>Created</dt>
        <dd>{when(k.createdAt)}</dd>
        <dt>Expires</dt>
        <dd>{when(k.expires)}</dd>
        {credits !== undefined && (
          <>
            <dt>Credits left</dt>
            <dd>
              {credits === null ? "unlimited" : credits}
              {k.credits?.refill
                ? ` (refilled ${k.credits.refill.interval} to ${k.credits.refill.amount})`
                : ""}
            </dd>
          </>
        )}
      </dl>
      {showUsage && <Usage keyId={k.keyId} keyName={label} range={range} onSessionEnded={onEnded} />}
    </article>
  );
}

function CreateKey({
  failed,
  onCreated,
}: {
  failed(err: unknown): PortalError;
  onCreated(key: string, keyId: string): void;
}) {
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<PortalError | undefined>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { data } = await portalCall<{ keyId: string; key: string }>("createKey", {
        ...(name.trim() ? { name: name.trim() } : {}),
      });
      setName("");
      onCreated(data.key, data.keyId);
    } catch (err) {
      setError(failed(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card create" onSubmit={submit}>
      <h2>Create a key</h2>
      <Field label="Name" hint="Optional: what the key is for, so you can tell your keys apart">
        <input value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <button type="submit" class="primary" disabled={busy}>
        Create key
      </button>
      {error && (
        <p class="error" role="alert">
          {error.status === 403 ? "This session may not create keys." : `No key was created: ${error.detail}`}
        </p>
      )}
    </form>
  );
}

render(<App />, document.getElementById("app")!);
