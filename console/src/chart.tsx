import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { type Bucket, call } from "./api.ts";
import { ErrorBox, Loading, TableWrap, useLoad } from "./ui.tsx";

/** Outcomes as the buckets count them, in stacking order, with their colours and names. */
const OUTCOMES = [
  { field: "valid", label: "Valid", color: "#15803d" },
  { field: "rateLimited", label: "Rate limited", color: "#c2410c" },
  { field: "usageExceeded", label: "Usage exceeded", color: "#7e22ce" },
  { field: "expired", label: "Expired", color: "#92400e" },
  { field: "disabled", label: "Disabled", color: "#4b5563" },
  { field: "notFound", label: "Not found", color: "#b91c1c" },
  { field: "forbidden", label: "Forbidden", color: "#9f1239" },
  { field: "insufficientPermissions", label: "Insufficient permissions", color: "#be185d" },
] as const satisfies readonly { field: keyof Bucket; label: string; color: string }[];

const RANGES = [
  { id: "24h", label: "Last 24 hours", ms: 86_400_000, granularity: "hour" },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000, granularity: "hour" },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000, granularity: "day" },
  { id: "90d", label: "Last 90 days", ms: 90 * 86_400_000, granularity: "day" },
] as const;

type Granularity = "hour" | "day";
const WHOLE = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8, 1e9,
];
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
  const totals = OUTCOMES.map((o) => buckets.reduce((n, b) => n + b[o.field], 0));
  const total = totals.reduce((a, b) => a + b, 0);
  const summary =
    total === 0
      ? "No verifications in this range."
      : `${total} verification${total === 1 ? "" : "s"} in this range: ${OUTCOMES.map((o, i) =>
          totals[i] ? `${totals[i]} ${o.label.toLowerCase()}` : "",
        )
          .filter(Boolean)
          .join(", ")}.`;

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
          <Plot buckets={buckets} granularity={granularity} label={`${title}: ${summary}`} />
          <ul class="legend" aria-hidden="true">
            {OUTCOMES.map((o) => (
              <li key={o.field}>
                <span class="swatch" style={{ background: o.color }} />
                {o.label}
              </li>
            ))}
          </ul>
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
                      <td key={o.field}>{b[o.field]}</td>
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

/**
 * uPlot draws bars; stacking is done here: series i holds the sum of outcomes i and after, drawn
 * first to last so each shorter bar covers the one behind it.
 */
function Plot({
  buckets,
  granularity,
  label,
}: {
  buckets: Bucket[];
  granularity: Granularity;
  label: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = buckets.map((b) => b.time / 1000);
    const stacked = OUTCOMES.map((_, i) =>
      buckets.map((b) => OUTCOMES.slice(i).reduce((n, o) => n + b[o.field], 0)),
    );
    const bars = uPlot.paths.bars!({ size: [0.8, 40], align: 0 });
    const width = () => Math.max(280, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { stroke: "#374151", grid: { stroke: "#e5e7eb" } },
          // Counts are whole: ticks at 1, 2, 5, 10… only.
          { stroke: "#374151", grid: { stroke: "#e5e7eb" }, size: 48, incrs: WHOLE },
        ],
        series: [
          {},
          ...OUTCOMES.map((o) => ({
            label: o.label,
            fill: o.color,
            stroke: o.color,
            width: 0,
            paths: bars,
            points: { show: false },
          })),
        ],
      },
      [xs, ...stacked],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, granularity]);
  return <div ref={box} class="plot" role="img" aria-label={label} />;
}
