import { render } from "preact";
import { useState } from "preact/hooks";
import { ApiError, call } from "./api.ts";
import { AnalyticsPage } from "./pages/analytics.tsx";
import { ApiPage } from "./pages/api.tsx";
import { ApisPage } from "./pages/apis.tsx";
import { AuditPage, KeyByIdPage } from "./pages/audit.tsx";
import { CreateKeyPage } from "./pages/create-key.tsx";
import { IdentitiesPage, IdentityPage } from "./pages/identities.tsx";
import { KeyPage } from "./pages/key.tsx";
import { PermissionsPage } from "./pages/permissions.tsx";
import { PoliciesPage } from "./pages/policies.tsx";
import { PortalPage, PortalsPage } from "./pages/portals.tsx";
import { NamespacePage, RatelimitsPage } from "./pages/ratelimits.tsx";
import { WebhookPage, WebhooksPage } from "./pages/webhooks.tsx";
import { href, routeParams, useRoute } from "./router.ts";
import { rootKey, signIn, signOut } from "./session.ts";
import { ErrorBox, Field } from "./ui.tsx";
import "./styles.css";

const NAV = [
  { id: "apis", label: "APIs" },
  { id: "identities", label: "Identities" },
  { id: "permissions", label: "Permissions & roles" },
  { id: "ratelimits", label: "Rate limits" },
  { id: "analytics", label: "Analytics" },
  { id: "webhooks", label: "Webhooks" },
  { id: "portals", label: "Portals" },
  { id: "policies", label: "Policies" },
  { id: "audit", label: "Audit log" },
] as const;

function App() {
  const [signedIn, setSignedIn] = useState(rootKey() !== null);
  const route = useRoute();
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const section = route[0] ?? "apis";
  return (
    <>
      {/* A button, not a link to #main: the fragment holds the route. */}
      <button type="button" class="skip" onClick={() => document.getElementById("main")?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href={href("apis")}>
          Latchkey
        </a>
        <nav aria-label="Sections">
          <ul>
            {NAV.map((n) => (
              <li key={n.id}>
                <a href={href(n.id)} aria-current={section === n.id ? "page" : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
            <li>
              <a href="/docs">API reference</a>
            </li>
          </ul>
        </nav>
        <button
          type="button"
          class="signout"
          onClick={() => {
            signOut();
            location.hash = "";
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

/** Each page is keyed by what it shows, so going from one key to another starts the page afresh. */
function Page({ route }: { route: string[] }) {
  const [section, id, sub, subId] = route;
  switch (section) {
    case undefined:
    case "apis":
      if (id === undefined) return <ApisPage />;
      if (sub === "new-key") return <CreateKeyPage key={`new-${id}`} apiId={id} />;
      if (sub === "keys" && subId) return <KeyPage key={subId} apiId={id} keyId={subId} />;
      return <ApiPage key={id} apiId={id} />;
    case "identities":
      return id === undefined ? <IdentitiesPage /> : <IdentityPage key={id} identity={id} />;
    case "permissions":
      return <PermissionsPage />;
    case "ratelimits":
      return id === undefined ? <RatelimitsPage /> : <NamespacePage key={id} namespace={id} />;
    case "analytics":
      return <AnalyticsPage />;
    case "webhooks":
      return id === undefined ? <WebhooksPage /> : <WebhookPage key={id} webhookId={id} />;
    case "portals":
      return id === undefined ? <PortalsPage /> : <PortalPage key={id} portalId={id} />;
    case "policies":
      return <PoliciesPage />;
    case "keys":
      return id === undefined ? <ApisPage /> : <KeyByIdPage key={id} keyId={id} />;
    case "audit":
      // Keyed by its query, so following a link to other filters starts the page afresh.
      return <AuditPage key={routeParams().toString()} />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            There is no page here. <a href={href("apis")}>Go to the APIs</a>.
          </p>
        </section>
      );
  }
}

function SignIn({ onSignedIn }: { onSignedIn(): void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // Any operation tells a key Latchkey does not know (401) from one it knows; a 403 is a known key.
      await call("identities.listIdentities", { limit: 1 }, key.trim());
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 0) {
        setError(err);
        setBusy(false);
        return;
      }
    }
    signIn(key.trim());
    setKey("");
    setBusy(false);
    onSignedIn();
  };
  return (
    <main id="main" class="signin">
      <h1>Latchkey console</h1>
      {/* No name on the input and method=post: the key can never end up in a URL. */}
      <form method="post" onSubmit={submit} class="card">
        <Field
          label="Root key"
          hint="npm start printed it on its first start; it is kept in .latchkey/root-key."
        >
          <input
            type="password"
            autoComplete="off"
            spellcheck={false}
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <ErrorBox error={error} />
        <p class="muted small">
          The key stays in this tab only (sessionStorage) and is sent only to this Latchkey, in the
          Authorization header. Signing out or closing the tab forgets it. The console sees what the key's
          permissions allow.
        </p>
      </form>
    </main>
  );
}

render(<App />, document.getElementById("app")!);
