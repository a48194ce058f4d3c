import { useState } from "preact/hooks";
import { call, type Key } from "../api.ts";
import { ErrorBox, Field, useAction } from "../ui.tsx";

/** Percentages a line of text names, in any separators; NaN for a word that is not one, which the API refuses. */
export function parseThresholds(text: string): number[] {
  return text
    .split(/[\s,%]+/)
    .filter((s) => s !== "")
    .map((s) => (/^\d+$/.test(s) ? Number(s) : Number.NaN));
}

/** A key's credit thresholds (credits.low), editable; empty returns the key to its API's. */
export function CreditThresholdsCard({ k, onChanged }: { k: Key; onChanged(): void }) {
  const own = k.creditThresholds ?? [];
  const [text, setText] = useState(own.join(", "));
  const act = useAction();
  const save = async (e: Event) => {
    e.preventDefault();
    const creditThresholds = parseThresholds(text);
    const done = await act.run(async () => {
      if (creditThresholds.some(Number.isNaN)) {
        throw new Error("Thresholds are whole percentages from 0 to 100, for example 50, 20, 0.");
      }
      return call("keys.updateKey", { keyId: k.keyId, creditThresholds });
    });
    if (done) onChanged();
  };
  return (
    <form class="card" onSubmit={save} aria-labelledby="thresholds-title">
      <h2 id="thresholds-title">Credit thresholds</h2>
      <p class="muted small" data-testid="thresholds-now">
        {own.length > 0
          ? `credits.low goes out when the balance reaches ${own.map((p) => `${p} %`).join(", ")} of its refill amount (or of the balance last given), once each per period.`
          : "None of its own: its API's thresholds apply, else the deployment's single CREDITS_LOW_FRACTION."}
      </p>
      <Field label="Thresholds (percent)">
        <input
          class="mono"
          value={text}
          placeholder="50, 20, 0"
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </Field>
      <button type="submit" disabled={act.busy || k.credits === undefined}>
        Save thresholds
      </button>
      <ErrorBox error={act.error} />
    </form>
  );
}
