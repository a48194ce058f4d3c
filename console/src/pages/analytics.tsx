import { useState } from "preact/hooks";
import { type ChartFilter, VerificationsChart } from "../chart.tsx";
import { allApis } from "../known.ts";
import { routeParams } from "../router.ts";
import { Field, list, useLoad } from "../ui.tsx";

export function AnalyticsPage() {
  const params = routeParams();
  const [apiId, setApiId] = useState(params.get("apiId") ?? "");
  const [keyId, setKeyId] = useState("");
  const [identity, setIdentity] = useState("");
  const [tags, setTags] = useState("");
  const [filter, setFilter] = useState<ChartFilter>(
    params.get("apiId") ? { apiId: params.get("apiId")! } : {},
  );
  // The menu of APIs the root key may read; a key that may read none still charts the workspace.
  const apis = useLoad(() => allApis().catch(() => []), []).data ?? [];
  return (
    <>
      <h1>Analytics</h1>
      <p class="muted">
        Verifications per hour or day, by outcome, for the whole workspace or narrowed to an API, a key, an
        identity or tags. Raw SQL over the same data: <code>analytics.getVerifications</code> with a query
        (with ClickHouse).
      </p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const next: ChartFilter = {};
          if (apiId.trim()) next.apiId = apiId.trim();
          if (keyId.trim()) next.keyId = keyId.trim();
          if (identity.trim()) next.identity = identity.trim();
          if (list(tags).length) next.tags = list(tags);
          setFilter(next);
        }}
      >
        <Field label="API">
          <select value={apiId} onChange={(e) => setApiId(e.currentTarget.value)}>
            <option value="">all APIs</option>
            {apis.map((a) => (
              <option key={a.apiId} value={a.apiId}>
                {a.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Key id">
          <input value={keyId} onInput={(e) => setKeyId(e.currentTarget.value)} />
        </Field>
        <Field label="Identity (id or external id)">
          <input value={identity} onInput={(e) => setIdentity(e.currentTarget.value)} />
        </Field>
        <Field label="Tags" hint="Separated by commas">
          <input value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </Field>
        <button type="submit">Show</button>
      </form>
      <VerificationsChart title="Verifications" filter={filter} />
    </>
  );
}
