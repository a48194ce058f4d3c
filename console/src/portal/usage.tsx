import { useEffect, useState } from "preact/hooks";
import { SMALL, type Stack, StackedBars, Legend as StackLegend, summarize } from "../stacked-bars.tsx";
import { type Point, PortalError, portalCall } from "./api.ts";

/** A bucket's outcomes as the chart stacks them; "Refused, other" is every refusal not named before it. */
const OUTCOMES: readonly Stack<Point>[] = [
  { label: "Valid", color: "#15803d", count: (p) => p.valid },
  { label: "Rate limited", color: "#c2410c", count: (p) => p.rateLimited },
  { label: "Usage exceeded", color: "#7e22ce", count: (p) => p.usageExceeded },
  {
    label: "Refused, other",
    color: "#4b5563",
    count: (p) => Math.max(0, p.total - p.valid - p.rateLimited - p.usageExceeded),
  },
];

export const RANGES = [
  { id: "24h", label: "Last 24 hours", ms: 86_400_000 },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000 },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000 },
] as const;
export type Range = (typeof RANGES)[number]["id"];

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

  const { total, summary } = summarize(points ?? [], OUTCOMES, "");
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
          <StackedBars
            rows={points}
            stacks={OUTCOMES}
            label={`Verifications of ${keyName}, ${rangeLabel}: ${summary}`}
            size={SMALL}
          />
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
                            <td key={o.label}>{o.count(p)}</td>
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

/** The outcomes' colours, shown once above the keys' charts (main.tsx). */
export function Legend() {
  return <StackLegend stacks={OUTCOMES} />;
}
