import { useState } from "preact/hooks";
import { ApiError, call, type Override } from "../api.ts";
import { allNamespaces } from "../known.ts";
import { go, href } from "../router.ts";
import { type BarsSize, Legend, REGULAR, type Stack, StackedBars } from "../stacked-bars.tsx";
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
  usePages,
  when,
} from "../ui.tsx";

interface NamespaceRow {
  id: string;
  name: string;
}

export function RatelimitsPage() {
  const [name, setName] = useState("");
  // Every namespace the root key may read, 100 a page (ratelimits.listNamespaces).
  const namespaces = usePages(
    (cursor) =>
      call<NamespaceRow[]>("ratelimits.listNamespaces", { limit: 100, ...(cursor ? { cursor } : {}) }),
    [],
  );
  // Checks of the last 24 hours per namespace; a root key without ratelimit analytics just sees none.
  const day = useLoad(async () => {
    const end = Date.now() + 1;
    const { data } = await call<RatelimitBucket[]>("analytics.getRatelimits", {
      start: end - 86_400_000,
      end,
      granularity: "day",
      groupBy: "namespace",
    });
    const per = new Map<string, { passed: number; refused: number }>();
    for (const b of data) {
      const at = per.get(b.namespaceId ?? "") ?? { passed: 0, refused: 0 };
      per.set(b.namespaceId ?? "", { passed: at.passed + b.passed, refused: at.refused + b.refused });
    }
    return per;
  }, []);
  const count = (id: string, field: "passed" | "refused") =>
    day.data ? (day.data.get(id)?.[field] ?? 0) : "—";
  return (
    <>
      <h1>Rate limits</h1>
      <p class="muted">
        A namespace holds limits checked with <code>ratelimits.limit</code> and overrides for chosen
        identifiers. These are the namespaces your root key may read (<code>ratelimits.listNamespaces</code>).
      </p>
      {!namespaces.loaded ? <Loading what="namespaces" /> : null}
      <ErrorBox error={namespaces.error} />
      {namespaces.loaded && !namespaces.error && namespaces.rows.length === 0 && (
        <Empty title="No namespaces yet">
          <p>
            A namespace is made by its first limit check. Open one by name below, or check a limit with curl:
          </p>
          <Curl
            operation="ratelimits.limit"
            body={{ namespace: "api.requests", identifier: "user_123", limit: 10, duration: 60000 }}
          />
        </Empty>
      )}
      {namespaces.rows.length > 0 && (
        <TableWrap
          label="Namespaces"
          columns={["Name", "Id", "Passed, last 24 hours", "Refused, last 24 hours"]}
        >
          {namespaces.rows.map((n) => (
            <tr key={n.id}>
              <td>
                <a href={href("ratelimits", n.name)}>{n.name}</a>
              </td>
              <td>
                <code>{n.id}</code>
              </td>
              <td>{count(n.id, "passed")}</td>
              <td>{count(n.id, "refused")}</td>
            </tr>
          ))}
        </TableWrap>
      )}
      {namespaces.hasMore && (
        <button type="button" onClick={namespaces.more} disabled={namespaces.busy}>
          Load more namespaces
        </button>
      )}
      <RatelimitsChart title="Rate-limit checks" />
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          go("ratelimits", name.trim());
        }}
      >
        <h2>Open a namespace</h2>
        <p class="muted small">Also one that does not exist yet: its first check makes it.</p>
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
  // The namespace's id, for its chart: the route names it as people do, by name.
  const found = useLoad(
    async () => (await allNamespaces()).find((n) => n.name === namespace || n.id === namespace),
    [namespace],
  );
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
      {found.data && (
        <RatelimitsChart title={`Checks in ${namespace}`} namespaceId={found.data.id} byIdentifier />
      )}
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

/** A bucket of analytics.getRatelimits' structured form. */
interface RatelimitBucket {
  time: number;
  namespaceId?: string;
  identifier?: string;
  total: number;
  passed: number;
  refused: number;
}

interface Checks {
  time: number;
  passed: number;
  refused: number;
}

const PASSED: Stack<Checks> = { label: "Passed", color: "#15803d", count: (b) => b.passed };
const REFUSED: Stack<Checks> = { label: "Refused", color: "#c2410c", count: (b) => b.refused };
/** The legend's order. */
const SERIES = [PASSED, REFUSED];
/** Refused stacked on passed: their sum drawn first in refused's colour, the passed covering it. */
const STACKED = [REFUSED, PASSED];
const SIZE: BarsSize = { ...REGULAR, height: 200 };

const RANGES = [
  { id: "24h", label: "Last 24 hours", ms: 86_400_000, step: 3_600_000, granularity: "hour" },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000, step: 3_600_000, granularity: "hour" },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000, step: 86_400_000, granularity: "day" },
] as const;

/**
 * Checks passed and refused over time (analytics.getRatelimits' structured form, which works on every
 * storage), stacked, for the workspace or one namespace; the table behind it one click away, per
 * identifier on a namespace's page.
 */
function RatelimitsChart({
  title,
  namespaceId,
  byIdentifier = false,
}: {
  title: string;
  namespaceId?: string;
  byIdentifier?: boolean;
}) {
  const [range, setRange] = useState<(typeof RANGES)[number]["id"]>("24h");
  const [round, setRound] = useState(0);
  const chosen = RANGES.find((r) => r.id === range)!;
  const loaded = useLoad(async () => {
    const step = chosen.step;
    const end = Math.ceil((Date.now() + 1) / step) * step;
    const start = end - Math.ceil(chosen.ms / step) * step;
    const { data } = await call<RatelimitBucket[]>("analytics.getRatelimits", {
      start,
      end,
      granularity: chosen.granularity,
      ...(namespaceId ? { namespaceId } : {}),
      ...(byIdentifier ? { groupBy: "identifier" } : {}),
    });
    const sums = new Map<number, { passed: number; refused: number }>();
    for (const b of data) {
      const at = sums.get(b.time) ?? { passed: 0, refused: 0 };
      sums.set(b.time, { passed: at.passed + b.passed, refused: at.refused + b.refused });
    }
    const series: Checks[] = [];
    for (let t = start; t < end; t += step)
      series.push({ time: t, ...(sums.get(t) ?? { passed: 0, refused: 0 }) });
    return { series, rows: data.filter((b) => b.total > 0) };
  }, [namespaceId, range, round]);
  const series = loaded.data?.series ?? [];
  const passed = series.reduce((n, b) => n + b.passed, 0);
  const refused = series.reduce((n, b) => n + b.refused, 0);
  const summary =
    passed + refused === 0
      ? "No checks in this range."
      : `${passed + refused} check${passed + refused === 1 ? "" : "s"} in this range: ${passed} passed, ${refused} refused.`;
  const id = `rl-chart-${namespaceId ?? "all"}`;
  return (
    <section class="card" aria-labelledby={id}>
      <div class="row wrap between">
        <h3 id={id}>{title}</h3>
        <div class="row wrap">
          <label class="inline">
            Range{" "}
            <select value={range} onChange={(e) => setRange(e.currentTarget.value as typeof range)}>
              {RANGES.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.label}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => setRound((r) => r + 1)}>
            Refresh
          </button>
        </div>
      </div>
      <ErrorBox error={loaded.error} />
      {loaded.loading && !loaded.data ? <Loading what="checks" /> : null}
      {loaded.data && (
        <>
          <p class="summary" role="status" data-testid="ratelimit-summary">
            {summary}
          </p>
          <StackedBars rows={series} stacks={STACKED} label={`${title}: ${summary}`} size={SIZE} />
          <Legend stacks={SERIES} />
          <details>
            <summary>Show the table</summary>
            <TableWrap
              label={`${title}, as a table`}
              columns={[
                chosen.granularity === "hour" ? "Hour" : "Day",
                ...(byIdentifier ? ["Identifier"] : []),
                "Passed",
                "Refused",
              ]}
            >
              {loaded.data.rows.map((b) => (
                <tr key={`${b.time}-${b.identifier ?? ""}`}>
                  <th scope="row">{new Date(b.time).toLocaleString()}</th>
                  {byIdentifier && (
                    <td>
                      <code>{b.identifier}</code>
                    </td>
                  )}
                  <td>{b.passed}</td>
                  <td>{b.refused}</td>
                </tr>
              ))}
              {loaded.data.rows.length === 0 && (
                <tr>
                  <td colSpan={byIdentifier ? 4 : 3}>No checks in this range.</td>
                </tr>
              )}
            </TableWrap>
          </details>
        </>
      )}
    </section>
  );
}
