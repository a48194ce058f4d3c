import type { Ratelimit } from "./api.ts";
import { NumberInput } from "./ui.tsx";

/** Rows of named rate limits (name, limit per duration, auto-apply), for keys and identities. */
export function LimitsEditor({ value, onChange }: { value: Ratelimit[]; onChange(next: Ratelimit[]): void }) {
  const set = (i: number, patch: Partial<Ratelimit>) =>
    onChange(value.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset class="limits">
      <legend>Rate limits</legend>
      {value.length === 0 && <p class="muted small">None.</p>}
      {value.map((r, i) => (
        <div class="row wrap limit" key={i}>
          <label class="inline">
            Name{" "}
            <input
              required
              minLength={3}
              value={r.name}
              onInput={(e) => set(i, { name: e.currentTarget.value })}
            />
          </label>
          {/* biome-ignore lint/a11y/noLabelWithoutControl: NumberInput is the input */}
          <label class="inline">
            Limit{" "}
            <NumberInput required min={1} value={r.limit} onValue={(v) => set(i, { limit: Number(v) })} />
          </label>
          {/* biome-ignore lint/a11y/noLabelWithoutControl: NumberInput is the input */}
          <label class="inline">
            per (ms){" "}
            <NumberInput
              required
              min={1000}
              step={1000}
              value={r.duration}
              onValue={(v) => set(i, { duration: Number(v) })}
            />
          </label>
          <label class="inline">
            <input
              type="checkbox"
              checked={r.autoApply ?? false}
              onChange={(e) => set(i, { autoApply: e.currentTarget.checked })}
            />{" "}
            auto-apply
          </label>
          <button type="button" onClick={() => onChange(value.filter((_, j) => j !== i))}>
            Remove<span class="sr-only"> limit {r.name}</span>
          </button>
        </div>
      ))}
      <button
        type="button"
        onClick={() =>
          onChange([...value, { name: "requests", limit: 100, duration: 60_000, autoApply: true }])
        }
      >
        Add a rate limit
      </button>
    </fieldset>
  );
}

/** A limit as the API takes it: the id the API gave it is not sent back. */
export const limitBody = (r: Ratelimit) => ({
  name: r.name,
  limit: r.limit,
  duration: r.duration,
  autoApply: r.autoApply ?? false,
});
