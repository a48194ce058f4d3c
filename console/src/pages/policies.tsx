import { useState } from "preact/hooks";
import { call } from "../api.ts";
import {
  Confirm,
  Curl,
  DeleteButton,
  Empty,
  ErrorBox,
  Field,
  Loading,
  TableWrap,
  useAction,
  useLoad,
} from "../ui.tsx";

/** One policy as forwardAuth.getPolicy answers it (docs/edge.md: the policy file's entry). */
interface StoredPolicy {
  policyId: string;
  position?: number;
  default: boolean;
  policy: {
    name: string;
    apiId: string;
    hosts?: string[];
    paths?: string[];
    methods?: string[];
    dryRun?: boolean;
  } & Record<string, unknown>;
}

const EXAMPLE = { name: "orders", paths: ["/v1/orders/**"], apiId: "api_…", permissions: "orders.read" };

/** Every page of forwardAuth.listPolicies: at most 100 policies a workspace holds, in match order. */
async function allPolicies(): Promise<StoredPolicy[]> {
  const all: StoredPolicy[] = [];
  let cursor: string | undefined;
  do {
    const { data, pagination } = await call<StoredPolicy[]>("forwardAuth.listPolicies", {
      limit: 100,
      ...(cursor ? { cursor } : {}),
    });
    all.push(...data);
    cursor = pagination?.hasMore ? pagination.cursor : undefined;
  } while (cursor);
  return all;
}

const matches = (p: StoredPolicy["policy"]) =>
  [p.methods?.join(" "), p.hosts?.join(" "), p.paths?.join(" ")].filter(Boolean).join(" · ") ||
  "every request";

/** The forward-auth endpoint's policies: in match order, created, edited, moved, deleted, dry-run switched. */
export function PoliciesPage() {
  const policies = useLoad(allPolicies, []);
  const change = useAction();
  const save = useAction();
  const [editing, setEditing] = useState<StoredPolicy | "new" | undefined>(undefined);
  const [text, setText] = useState("");
  const [isDefault, setIsDefault] = useState(false);
  const [deleting, setDeleting] = useState<StoredPolicy | undefined>(undefined);

  const startEdit = (p: StoredPolicy | "new") => {
    save.clear();
    setEditing(p);
    setIsDefault(p !== "new" && p.default);
    setText(JSON.stringify(p === "new" ? EXAMPLE : p.policy, null, 2));
  };
  const update = async (body: Record<string, unknown>) => {
    if (await change.run(() => call("forwardAuth.updatePolicy", body))) policies.reload();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    let policy: unknown;
    try {
      policy = JSON.parse(text);
    } catch {
      await save.run(() => Promise.reject(new Error("The policy is not JSON: check its quotes and commas.")));
      return;
    }
    const done = await save.run(() =>
      editing === "new"
        ? call("forwardAuth.createPolicy", { policy, ...(isDefault ? { default: true } : {}) })
        : call("forwardAuth.updatePolicy", { policyId: (editing as StoredPolicy).policyId, policy }),
    );
    if (done) {
      setEditing(undefined);
      policies.reload();
    }
  };
  const confirmDelete = async () => {
    const p = deleting!;
    setDeleting(undefined);
    if (await change.run(() => call("forwardAuth.deletePolicy", { policyId: p.policyId }))) policies.reload();
  };
  const ordinary = policies.data?.filter((p) => !p.default).length ?? 0;

  return (
    <>
      <h1>Forward-auth policies</h1>
      <p class="muted">
        What a reverse proxy asking <code>/forward-auth</code> verifies, by host, path and method. Tried in
        this order: the first match wins, the default covers the rest. Policies from{" "}
        <code>FORWARD_AUTH_POLICIES_FILE</code> come before these and are not shown here.
      </p>
      <ErrorBox error={change.error} />
      {policies.loading && !policies.data ? <Loading what="policies" /> : null}
      <ErrorBox error={policies.error} />
      {policies.data && policies.data.length === 0 && (
        <Empty title="No policies yet">
          <p>Create one below, or with curl:</p>
          <Curl operation="forwardAuth.createPolicy" body={{ policy: EXAMPLE }} />
        </Empty>
      )}
      {policies.data && policies.data.length > 0 && (
        <TableWrap label="Policies" columns={["#", "Name", "Matches", "API", "Dry run"]} actions>
          {policies.data.map((p) => (
            <tr key={p.policyId}>
              <td>{p.default ? "default" : (p.position ?? 0) + 1}</td>
              <td>
                <strong>{p.policy.name}</strong>
              </td>
              <td class="mono small">{p.default ? "what no other matches" : matches(p.policy)}</td>
              <td>
                <code>{p.policy.apiId}</code>
              </td>
              <td>
                <label>
                  <input
                    type="checkbox"
                    checked={p.policy.dryRun === true}
                    disabled={change.busy}
                    aria-label={`Dry run for ${p.policy.name}`}
                    onChange={(e) =>
                      update({
                        policyId: p.policyId,
                        policy: { ...p.policy, dryRun: e.currentTarget.checked },
                      })
                    }
                  />
                </label>
              </td>
              <td class="actions">
                {!p.default && (
                  <>
                    <button
                      type="button"
                      aria-label={`Move ${p.policy.name} up`}
                      disabled={change.busy || p.position === 0}
                      onClick={() => update({ policyId: p.policyId, position: (p.position ?? 0) - 1 })}
                    >
                      ↑
                    </button>
                    <button
                      type="button"
                      aria-label={`Move ${p.policy.name} down`}
                      disabled={change.busy || p.position === ordinary - 1}
                      onClick={() => update({ policyId: p.policyId, position: (p.position ?? 0) + 1 })}
                    >
                      ↓
                    </button>
                  </>
                )}
                <button type="button" onClick={() => startEdit(p)}>
                  Edit
                </button>
                <DeleteButton what={`policy ${p.policy.name}`} onClick={() => setDeleting(p)} />
              </td>
            </tr>
          ))}
        </TableWrap>
      )}
      {editing === undefined ? (
        <button type="button" class="primary" onClick={() => startEdit("new")}>
          Create a policy
        </button>
      ) : (
        <form class="card" onSubmit={submit}>
          <h2>{editing === "new" ? "Create a policy" : `Edit ${editing.policy.name}`}</h2>
          <Field
            label="Policy (JSON)"
            hint="One entry of the policy file: name, hosts, paths, methods, apiId, key, permissions, cost, ratelimits, tags, upstream, stripKey, dryRun (docs/edge.md)."
          >
            <textarea
              rows={12}
              class="mono"
              spellcheck={false}
              value={text}
              onInput={(e) => setText(e.currentTarget.value)}
            />
          </Field>
          {editing === "new" && (
            <label class="check">
              <input
                type="checkbox"
                checked={isDefault}
                onChange={(e) => setIsDefault(e.currentTarget.checked)}
              />{" "}
              The default: covers what no other policy matches (no hosts, paths or methods)
            </label>
          )}
          <div class="row">
            <button type="submit" class="primary" disabled={save.busy}>
              {editing === "new" ? "Create policy" : "Save policy"}
            </button>
            <button type="button" onClick={() => setEditing(undefined)}>
              Cancel
            </button>
          </div>
          <ErrorBox error={save.error} />
        </form>
      )}
      <Confirm
        open={deleting !== undefined}
        title={`Delete the policy “${deleting?.policy.name ?? ""}”?`}
        message={
          <p>
            Requests it matched fall to the next policy that matches them, or the default, from the next
            request on.
          </p>
        }
        confirm={`Delete ${deleting?.policy.name ?? ""}`}
        onConfirm={confirmDelete}
        onCancel={() => setDeleting(undefined)}
      />
    </>
  );
}
