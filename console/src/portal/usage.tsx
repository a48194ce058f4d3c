import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { type Point, PortalError, portalCall } from "./api.ts";

/** A bucket's outcomes as the chart stacks them; "Refused, other" is every refusal not named before it. */
const OUTCOMES = [
  { label: "Valid", color: "#15803d", of: (p: Point) => p.valid },
  { label: "Rate limited", color: "#c2410c", of: (p: Point) => p.rateLimited },
  { label: "Usage exceeded", color: "#7e22ce", of: (p: Point) => p.usageExceeded },
  {
    label: "Refused, other",
    color: "#4b5563",
    of: (p: Point) => Math.max(0, p.total - p.valid - p.rateLimited - p.usageExceeded),
  },
] as const;

export const RANGES = [
  { id: "24h", label: "Last 24 hours", ms: 86_400_000 },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000 },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000 },
] as const;
export type Range = (typeof RANGES)[number]["id"];

const WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/**
 * A key's verifications over the chosen range, from portal.getVerifications (its buckets are the server's
 * choice, zero-filled): a sentence saying the totals, the chart, and the table behind it.
 */
export function Usage({
  keyId,
  keyName,
  range,
  onSessionEnded,
}: {
  keyId: string;
  keyName: string;
  range: Range;
  onSessionEnded(err: PortalError): void;
}) {
  const [points, setPoints] = useState<Point[] | undefined>(undefined);
  const [error, setError] = useState<PortalError | undefined>(undefined);
  useEffect(() => {
    let current = true;
    const ms = RANGES.find((r) => r.id === range)!.ms;
    const endTime = Date.now() + 1;
    portalCall<Point[]>("getVerifications", { startTime: endTime - ms, endTime, keyId }).then(
      ({ data }) => {
        if (!current) return;
        setPoints(Array.isArray(data) ? data : []);
        setError(undefined);
      },
      (err: unknown) => {
        if (!current) return;
        const e = err instanceof PortalError ? err : new PortalError(0, "Error", String(err));
        if (e.status === 401) onSessionEnded(e);
        else setError(e);
      },
    );
    return () => {
      current = false;
    };
  }, [keyId, range]);

  const totals = OUTCOMES.map((o) => (points ?? []).reduce((n, p) => n + o.of(p), 0));
  const total = totals.reduce((a, b) => a + b, 0);
  const summary =
    total === 0
      ? "No verifications in this range."
      : `${total} verification${total === 1 ? "" : "s"}: ${OUTCOMES.map((o, i) =>
          totals[i] ? `${totals[i]} ${o.label.toLowerCase()}` : "",
        )
          .filter(Boolean)
          .join(", ")}.`;
  const rangeLabel = RANGES.find((r) => r.id === range)!.label.toLowerCase();
  return (
    <div class="usage">
      <h3 class="small-heading">Usage, {rangeLabel}</h3>
      {error && (
        <p class="error" role="alert">
          The usage could not be read: {error.detail}
        </p>
      )}
      {!points && !error && (
        <p class="muted" role="status">
          Loading usage…
        </p>
      )}
      {points && (
        <>
          <p class="summary" data-testid="usage-summary">
            {summary}
          </p>
          <Plot points={points} label={`Verifications of ${keyName}, ${rangeLabel}: ${summary}`} />
          {total > 0 && (
            <details>
              <summary>
                Show the table<span class="sr-only"> of {keyName}'s usage</span>
              </summary>
              <div class="table-wrap">
                <table>
                  <caption class="sr-only">Verifications of {keyName}</caption>
                  <thead>
                    <tr>
                      <th scope="col">From</th>
                      {OUTCOMES.map((o) => (
                        <th scope="col" key={o.label}>
                          {o.label}
                        </th>
                      ))}
                      <th scope="col">Total</th>
                    </tr>
                  </thead>
                  <tbody>
                    {points
                      .filter((p) => p.total > 0)
                      .map((p) => (
                        <tr key={p.time}>
                          <th scope="row">
                            {new Date(p.time).toLocaleString(undefined, {
                              dateStyle: "short",
                              timeStyle: "short",
                            })}
                          </th>
                          {OUTCOMES.map((o) => (
                            <td key={o.label}>{o.of(p)}</td>
                          ))}
                          <td>{p.total}</td>
                        </tr>
                      ))}
                  </tbody>
                </table>
              </div>
            </details>
          )}
        </>
      )}
    </div>
  );
}

export function Legend() {
  return (
    <ul class="legend" aria-hidden="true">
      {OUTCOMES.map((o) => (
        <li key={o.label}>
          <span class="swatch" style={{ background: o.color }} />
          {o.label}
        </li>
      ))}
    </ul>
  );
}

/** Stacked bars: series i holds the sum of outcomes i and after, drawn first to last. */
function Plot({ points, label }: { points: Point[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = points.map((p) => p.time / 1000);
    const stacked = OUTCOMES.map((_, i) =>
      points.map((p) => OUTCOMES.slice(i).reduce((n, o) => n + o.of(p), 0)),
    );
    const bars = uPlot.paths.bars!({ size: [0.8, 24], align: 0 });
    const width = () => Math.max(240, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 160,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { stroke: "#374151", grid: { stroke: "#e5e7eb" } },
          { stroke: "#374151", grid: { stroke: "#e5e7eb" }, size: 44, incrs: WHOLE },
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
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 160 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [points]);
  return <div ref={box} class="plot small-plot" role="img" aria-label={label} />;
}
