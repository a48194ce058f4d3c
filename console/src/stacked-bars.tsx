import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

// The stacked bar chart both builds draw: the console's verifications (chart.tsx) and rate-limit
// checks (pages/ratelimits.tsx), and a key's usage in the portal web app (portal/usage.tsx). It
// imports uPlot and nothing else of the console's, so the portal's bundle carries no more of it.

/** One outcome the bars stack: its name, its colour and its count in a row. */
export interface Stack<T> {
  label: string;
  color: string;
  count(row: T): number;
}

/** Counts are whole: y ticks at 1, 2, 5, 10… only. */
const WHOLE = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8, 1e9,
];

/** A chart's size: its height, its least width, its widest bar and its y axis's width, in pixels. */
export interface BarsSize {
  height: number;
  minWidth: number;
  barMax: number;
  axis: number;
  class: string;
}
/** The console's charts (chart.tsx; ratelimits.tsx's 200 high). Each is its own constant, so a build carries only the one it draws. */
export const REGULAR: BarsSize = { height: 220, minWidth: 280, barMax: 40, axis: 48, class: "plot" };
/** The portal's, beside each key (portal/usage.tsx; small-plot in portal.css). */
export const SMALL: BarsSize = { height: 160, minWidth: 240, barMax: 24, axis: 44, class: "plot small-plot" };

/**
 * The sentence that says a range's totals, e.g. "12 verifications in this range: 10 valid, 2 rate
 * limited." (`where` is " in this range", or ""), and the total.
 */
export function summarize<T>(
  rows: readonly T[],
  stacks: readonly Stack<T>[],
  where: string,
): { total: number; summary: string } {
  const totals = stacks.map((s) => rows.reduce((n, row) => n + s.count(row), 0));
  const total = totals.reduce((a, b) => a + b, 0);
  const summary =
    total === 0
      ? "No verifications in this range."
      : `${total} verification${total === 1 ? "" : "s"}${where}: ${stacks
          .map((s, i) => (totals[i] ? `${totals[i]} ${s.label.toLowerCase()}` : ""))
          .filter(Boolean)
          .join(", ")}.`;
  return { total, summary };
}

/** The colours' key, hidden from screen readers: the summary and the table say the same in words. */
export function Legend<T>({ stacks }: { stacks: readonly Stack<T>[] }) {
  return (
    <ul class="legend" aria-hidden="true">
      {stacks.map((s) => (
        <li key={s.label}>
          <span class="swatch" style={{ background: s.color }} />
          {s.label}
        </li>
      ))}
    </ul>
  );
}

/**
 * Rows over time (`time` in ms), as bars stacked by outcome. uPlot draws bars; stacking is done here:
 * series i holds the sum of outcomes i and after, drawn first to last so each shorter bar covers the
 * one behind it. `stacks` is a constant of its caller's: a new one draws the chart again.
 */
export function StackedBars<T extends { time: number }>({
  rows,
  stacks,
  label,
  size,
}: {
  rows: readonly T[];
  stacks: readonly Stack<T>[];
  /** What a screen reader hears for the chart: its title and summary. */
  label: string;
  size: BarsSize;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = rows.map((r) => r.time / 1000);
    const stacked = stacks.map((_, i) =>
      rows.map((r) => stacks.slice(i).reduce((n, s) => n + s.count(r), 0)),
    );
    const bars = uPlot.paths.bars!({ size: [0.8, size.barMax], align: 0 });
    const width = () => Math.max(size.minWidth, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: size.height,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { stroke: "#374151", grid: { stroke: "#e5e7eb" } },
          { stroke: "#374151", grid: { stroke: "#e5e7eb" }, size: size.axis, incrs: WHOLE },
        ],
        series: [
          {},
          ...stacks.map((s) => ({
            label: s.label,
            fill: s.color,
            stroke: s.color,
            width: 0,
            paths: bars,
            points: { show: false },
          })),
        ],
      },
      [xs, ...stacked],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: size.height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [rows, stacks, size]);
  return <div ref={box} class={size.class} role="img" aria-label={label} />;
}
