import { useState } from "preact/hooks";
import { call } from "../api.ts";
import type { StoredPolicy } from "../policy-form.ts";
import {
  Confirm,
  Curl,
  DeleteButton,
  Empty,
  ErrorBox,
  Loading,
  TableWrap,
  useAction,
  useLoad,
} from "../ui.tsx";
import { PolicyEditor } from "./policy-editor.tsx";

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
  const [editing, setEditing] = useState<StoredPolicy | "new" | undefined>(undefined);
  // Each opening of the editor starts from the policy as listed (a new key remounts it).
  const [opened, setOpened] = useState(0);
  const [deleting, setDeleting] = useState<StoredPolicy | undefined>(undefined);

  const startEdit = (p: StoredPolicy | "new") => {
    setEditing(p);
    setOpened((n) => n + 1);
  };
  const update = async (body: Record<string, unknown>) => {
    if (await change.run(() => call("forwardAuth.updatePolicy", body))) policies.reload();
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
        <PolicyEditor
          key={opened}
          editing={editing}
          onSaved={() => {
            setEditing(undefined);
            policies.reload();
          }}
          onCancel={() => setEditing(undefined)}
        />
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
