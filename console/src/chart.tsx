import { useState } from "preact/hooks";
import { type Bucket, call } from "./api.ts";
import { Legend, REGULAR, type Stack, StackedBars, summarize } from "./stacked-bars.tsx";
import { ErrorBox, Loading, TableWrap, useLoad } from "./ui.tsx";

/** Outcomes as the buckets count them, in stacking order, with their colours and names. */
const OUTCOMES: readonly Stack<Bucket>[] = [
  { label: "Valid", color: "#15803d", count: (b) => b.valid },
  { label: "Rate limited", color: "#c2410c", count: (b) => b.rateLimited },
  { label: "Usage exceeded", color: "#7e22ce", count: (b) => b.usageExceeded },
  { label: "Expired", color: "#92400e", count: (b) => b.expired },
  { label: "Disabled", color: "#4b5563", count: (b) => b.disabled },
  { label: "Not found", color: "#b91c1c", count: (b) => b.notFound },
  { label: "Forbidden", color: "#9f1239", count: (b) => b.forbidden },
  { label: "Insufficient permissions", color: "#be185d", count: (b) => b.insufficientPermissions },
];

const RANGES = [
  { id: "24h", label: "Last 24 hours", ms: 86_400_000, granularity: "hour" },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000, granularity: "hour" },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000, granularity: "day" },
  { id: "90d", label: "Last 90 days", ms: 90 * 86_400_000, granularity: "day" },
] as const;

type Granularity = "hour" | "day";
const STEP: Record<Granularity, number> = { hour: 3_600_000, day: 86_400_000 };

export interface ChartFilter {
  apiId?: string;
  keyId?: string;
  identity?: string;
  tags?: string[];
}

/**
 * Verifications over time, stacked by outcome (analytics.getVerifications' structured form), with a
 * time-range picker and the table behind the chart.
 */
export function VerificationsChart({ filter, title }: { filter: ChartFilter; title: string }) {
  const [range, setRange] = useState<(typeof RANGES)[number]["id"]>("24h");
  const chosen = RANGES.find((r) => r.id === range)!;
  const [granularity, setGranularity] = useState<Granularity>(chosen.granularity);
  const [round, setRound] = useState(0);
  const key = JSON.stringify(filter);
  const loaded = useLoad(async () => {
    const step = STEP[granularity];
    const end = Math.ceil((Date.now() + 1) / step) * step;
    const start = end - Math.ceil(chosen.ms / step) * step;
    const { data } = await call<Bucket[]>("analytics.getVerifications", {
      ...filter,
      start,
      end,
      granularity,
    });
    return fill(data, start, end, step);
  }, [key, range, granularity, round]);

  const buckets = loaded.data ?? [];
  const { total, summary } = summarize(buckets, OUTCOMES, " in this range");

  return (
    <section class="card" aria-labelledby={`chart-${title}`}>
      <div class="row wrap between">
        <h3 id={`chart-${title}`}>{title}</h3>
        <div class="row wrap">
          <label class="inline">
            Range{" "}
            <select
              value={range}
              onChange={(e) => {
                const next = RANGES.find((r) => r.id === e.currentTarget.value)!;
                setRange(next.id);
                setGranularity(next.granularity);
              }}
            >
              {RANGES.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.label}
                </option>
              ))}
            </select>
          </label>
          <label class="inline">
            Per{" "}
            <select
              value={granularity}
              onChange={(e) => setGranularity(e.currentTarget.value as Granularity)}
            >
              <option value="hour">hour</option>
              <option value="day">day</option>
            </select>
          </label>
          <button type="button" onClick={() => setRound((r) => r + 1)}>
            Refresh
          </button>
        </div>
      </div>
      {loaded.error ? <ErrorBox error={loaded.error} /> : null}
      {loaded.loading && !loaded.data ? <Loading what="verifications" /> : null}
      {loaded.data && (
        <>
          <p class="summary" role="status" data-testid="chart-summary">
            {summary}
          </p>
          <StackedBars rows={buckets} stacks={OUTCOMES} label={`${title}: ${summary}`} size={REGULAR} />
          <Legend stacks={OUTCOMES} />
          <details>
            <summary>Show the table</summary>
            <TableWrap
              label={`${title}, as a table`}
              columns={[
                granularity === "hour" ? "Hour" : "Day",
                ...OUTCOMES.map((o) => o.label),
                "Total",
                "Credits spent",
              ]}
            >
              {buckets
                .filter((b) => b.total > 0)
                .map((b) => (
                  <tr key={b.time}>
                    <th scope="row">{timeLabel(b.time, granularity)}</th>
                    {OUTCOMES.map((o) => (
                      <td key={o.label}>{o.count(b)}</td>
                    ))}
                    <td>{b.total}</td>
                    <td>{b.spentCredits}</td>
                  </tr>
                ))}
              {total === 0 && (
                <tr>
                  <td colSpan={OUTCOMES.length + 3}>No verifications in this range.</td>
                </tr>
              )}
            </TableWrap>
          </details>
        </>
      )}
    </section>
  );
}

const timeLabel = (ms: number, g: Granularity) =>
  g === "hour"
    ? new Date(ms).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" })
    : new Date(ms).toLocaleDateString();

/** One bucket per step from start to end: the API answers only the steps that had verifications. */
function fill(data: Bucket[], start: number, end: number, step: number): Bucket[] {
  const byTime = new Map<number, Bucket>();
  for (const b of data) {
    const t = Math.floor(b.time / step) * step;
    const at = byTime.get(t);
    if (!at) byTime.set(t, { ...b, time: t });
    else for (const k of Object.keys(b) as (keyof Bucket)[]) if (k !== "time") at[k] += b[k];
  }
  const out: Bucket[] = [];
  for (let t = start; t < end; t += step) {
    out.push(
      byTime.get(t) ?? {
        time: t,
        total: 0,
        valid: 0,
        rateLimited: 0,
        usageExceeded: 0,
        disabled: 0,
        expired: 0,
        notFound: 0,
        forbidden: 0,
        insufficientPermissions: 0,
        spentCredits: 0,
      },
    );
  }
  return out;
}
