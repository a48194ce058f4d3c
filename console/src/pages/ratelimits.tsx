import { useState } from "preact/hooks";
import { ApiError, call, type Override } from "../api.ts";
import { forgetNamespace, knownNamespaces, rememberNamespace } from "../known.ts";
import { go, href } from "../router.ts";
import {
  Confirm,
  Curl,
  DeleteButton,
  duration,
  Empty,
  ErrorBox,
  Field,
  Loading,
  NumberField,
  Pager,
  TableWrap,
  useAction,
  useLoad,
  when,
} from "../ui.tsx";

export function RatelimitsPage() {
  const [name, setName] = useState("");
  const [names, setNames] = useState(knownNamespaces());
  return (
    <>
      <h1>Rate limits</h1>
      <p class="muted">
        A namespace holds limits checked with <code>ratelimits.limit</code> and overrides for chosen
        identifiers. Latchkey's API lists no namespaces, so this page shows the ones opened in this browser.
      </p>
      {names.length === 0 ? (
        <Empty title="No namespaces opened here yet">
          <p>
            A namespace is made by its first limit check. Open one by name below, or check a limit with curl:
          </p>
          <Curl
            operation="ratelimits.limit"
            body={{ namespace: "api.requests", identifier: "user_123", limit: 10, duration: 60000 }}
          />
        </Empty>
      ) : (
        <ul class="namespaces">
          {names.map((n) => (
            <li key={n}>
              <a href={href("ratelimits", n)}>{n}</a>{" "}
              <button
                type="button"
                onClick={() => {
                  forgetNamespace(n);
                  setNames(knownNamespaces());
                }}
              >
                Forget<span class="sr-only"> {n}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          rememberNamespace(name.trim());
          go("ratelimits", name.trim());
        }}
      >
        <h2>Open a namespace</h2>
        <Field label="Namespace">
          <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary">
          Open
        </button>
      </form>
    </>
  );
}

export function NamespacePage({ namespace }: { namespace: string }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const overrides = useLoad(async () => {
    rememberNamespace(namespace);
    return (
      await call<{ overrides: Override[]; cursor?: string }>("ratelimits.listOverrides", {
        namespace,
        limit: 50,
        ...(cursor ? { cursor } : {}),
      })
    ).data;
  }, [namespace, cursor]);
  const [identifier, setIdentifier] = useState("");
  const [limit, setLimit] = useState("10");
  const [window, setWindow] = useState("60000");
  const set = useAction();
  const remove = useAction();
  const [deleting, setDeleting] = useState<Override | undefined>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    const done = await set.run(() =>
      call("ratelimits.setOverride", {
        namespace,
        identifier: identifier.trim(),
        limit: Number(limit),
        duration: Number(window),
      }),
    );
    if (done) {
      setIdentifier("");
      overrides.reload();
    }
  };
  const rows = overrides.data?.overrides ?? [];
  return (
    <>
      <p class="crumbs">
        <a href={href("ratelimits")}>Rate limits</a> /
      </p>
      <h1>{namespace}</h1>
      <h2>Overrides</h2>
      {/* One element around what comes and goes, so the forms below keep their state (and a result). */}
      <div>
        {overrides.loading && !overrides.data ? <Loading what="overrides" /> : null}
        {overrides.error instanceof ApiError && overrides.error.status === 404 ? (
          <Empty title="This namespace does not exist yet">
            <p>
              The first limit check in it makes it: try one below. Latchkey said: {overrides.error.detail}
            </p>
          </Empty>
        ) : (
          <ErrorBox error={overrides.error} />
        )}
        <ErrorBox error={remove.error} />
        {overrides.data && rows.length === 0 && (
          <Empty title="No overrides in this namespace">
            <p>An override replaces the limit for one identifier (or a pattern with *). Set one below.</p>
          </Empty>
        )}
        {rows.length > 0 && (
          <TableWrap label="Overrides" columns={["Identifier", "Limit"]} actions>
            {rows.map((o) => (
              <tr key={o.overrideId}>
                <td>
                  <code>{o.identifier}</code>
                </td>
                <td>{o.limit === 0 ? "banned (limit 0)" : `${o.limit} per ${duration(o.duration)}`}</td>
                <td class="actions">
                  <DeleteButton what={`override ${o.identifier}`} onClick={() => setDeleting(o)} />
                </td>
              </tr>
            ))}
          </TableWrap>
        )}
        <Pager cursors={cursors} next={overrides.data?.cursor} onChange={setCursors} />
      </div>
      <div class="grid2">
        <form class="card" onSubmit={submit}>
          <h2>Set an override</h2>
          <Field label="Identifier" hint="Exact, or a pattern with * (the most specific wins)">
            <input required value={identifier} onInput={(e) => setIdentifier(e.currentTarget.value)} />
          </Field>
          <NumberField
            label="Limit"
            hint="0 always denies"
            min={0}
            required
            value={limit}
            onValue={setLimit}
          />
          <NumberField
            label="Window (ms)"
            min={1000}
            step={1000}
            required
            value={window}
            onValue={setWindow}
          />
          <button type="submit" class="primary" disabled={set.busy}>
            Set override
          </button>
          <ErrorBox error={set.error} />
        </form>
        <TryLimit namespace={namespace} onChecked={overrides.reload} />
      </div>
      <Confirm
        open={deleting !== undefined}
        title={`Delete the override for “${deleting?.identifier ?? ""}”?`}
        message={<p>The identifier goes back to the limit each check asks for.</p>}
        confirm="Delete override"
        onConfirm={async () => {
          const o = deleting!;
          setDeleting(undefined);
          const done = await remove.run(() =>
            call("ratelimits.deleteOverride", { namespace, identifier: o.identifier }),
          );
          if (done) overrides.reload();
        }}
        onCancel={() => setDeleting(undefined)}
      />
    </>
  );
}

interface LimitResult {
  success: boolean;
  limit: number;
  remaining: number;
  reset: number;
  overrideId?: string;
}

/** One real check (it counts against the identifier's budget), to see what a limit answers. */
function TryLimit({ namespace, onChecked }: { namespace: string; onChecked(): void }) {
  const [identifier, setIdentifier] = useState("");
  const [limit, setLimit] = useState("10");
  const [window, setWindow] = useState("60000");
  const [cost, setCost] = useState("1");
  const act = useAction();
  const [result, setResult] = useState<LimitResult | undefined>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    const res = await act.run(() =>
      call<LimitResult>("ratelimits.limit", {
        namespace,
        identifier: identifier.trim(),
        limit: Number(limit),
        duration: Number(window),
        cost: Number(cost),
      }),
    );
    setResult(res?.data);
    if (res) onChecked();
  };
  return (
    <form class="card" onSubmit={submit}>
      <h2>Try a limit</h2>
      <p class="muted small">A real check: it counts against the identifier's budget.</p>
      <Field label="Identifier">
        <input required value={identifier} onInput={(e) => setIdentifier(e.currentTarget.value)} />
      </Field>
      <div class="grid2">
        <NumberField label="Limit" min={1} required value={limit} onValue={setLimit} />
        <NumberField label="Window (ms)" min={1000} required value={window} onValue={setWindow} />
        <NumberField label="Cost" min={0} required value={cost} onValue={setCost} />
      </div>
      <button type="submit" disabled={act.busy}>
        Check
      </button>
      <ErrorBox error={act.error} />
      {result && (
        <p role="status" class={result.success ? "ok" : "denied"}>
          <strong>{result.success ? "Allowed" : "Denied"}</strong>: {result.remaining} of {result.limit} left,
          resets {when(result.reset)}
          {result.overrideId ? ` (override ${result.overrideId} applied)` : ""}.
        </p>
      )}
    </form>
  );
}
