import { useState } from "preact/hooks";
import { call, type Pagination, type Permission, type Role } from "../api.ts";
import {
  Confirm,
  Curl,
  DeleteButton,
  Empty,
  ErrorBox,
  Field,
  Loading,
  list,
  Pager,
  TableWrap,
  useAction,
  useLoad,
} from "../ui.tsx";

export function PermissionsPage() {
  const [permissionPages, setPermissionPages] = useState<string[]>([]);
  const [rolePages, setRolePages] = useState<string[]>([]);
  const permissions = useLoad(
    () => call<Permission[]>("permissions.listPermissions", page(permissionPages.at(-1))),
    [permissionPages],
  );
  const roles = useLoad(() => call<Role[]>("permissions.listRoles", page(rolePages.at(-1))), [rolePages]);
  const reload = () => {
    permissions.reload();
    roles.reload();
  };
  return (
    <>
      <h1>Permissions and roles</h1>
      <p class="muted">
        A key holds permissions directly or through roles; a verification can ask for them (
        <code>documents.read AND documents.write</code>). Give them to a key on its page.
      </p>
      <div class="grid2">
        <div>
          <Permissions loaded={permissions} onChanged={reload} />
          <Pager
            cursors={permissionPages}
            next={permissions.data?.pagination?.cursor}
            onChange={setPermissionPages}
          />
        </div>
        <div>
          <Roles loaded={roles} onChanged={reload} />
          <Pager cursors={rolePages} next={roles.data?.pagination?.cursor} onChange={setRolePages} />
        </div>
      </div>
    </>
  );
}

const page = (cursor: string | undefined) => ({ limit: 100, ...(cursor ? { cursor } : {}) });

type Loaded<T> = ReturnType<typeof useLoad<{ data: T[]; pagination?: Pagination }>>;

function Permissions({ loaded, onChanged }: { loaded: Loaded<Permission>; onChanged(): void }) {
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [description, setDescription] = useState("");
  const create = useAction();
  const remove = useAction();
  const [deleting, setDeleting] = useState<Permission | undefined>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    const made = await create.run(() =>
      call("permissions.createPermission", {
        name: name.trim() || slug.trim(),
        slug: slug.trim(),
        ...(description.trim() ? { description: description.trim() } : {}),
      }),
    );
    if (made) {
      setName("");
      setSlug("");
      setDescription("");
      onChanged();
    }
  };
  const rows = loaded.data?.data ?? [];
  return (
    <section aria-labelledby="permissions-title">
      <h2 id="permissions-title">Permissions</h2>
      {loaded.loading && !loaded.data ? <Loading what="permissions" /> : null}
      <ErrorBox error={loaded.error} />
      <ErrorBox error={remove.error} />
      {loaded.data && rows.length === 0 && (
        <Empty title="No permissions yet">
          <p>Create one below, or with curl:</p>
          <Curl
            operation="permissions.createPermission"
            body={{ name: "Read documents", slug: "documents.read" }}
          />
        </Empty>
      )}
      {rows.length > 0 && (
        <TableWrap label="Permissions" columns={["Slug", "Name"]} actions>
          {rows.map((p) => (
            <tr key={p.id}>
              <td>
                <code>{p.slug}</code>
              </td>
              <td>
                {p.name}
                {p.description && <div class="muted small">{p.description}</div>}
              </td>
              <td class="actions">
                <DeleteButton what={`permission ${p.slug}`} onClick={() => setDeleting(p)} />
              </td>
            </tr>
          ))}
        </TableWrap>
      )}
      <form class="card" onSubmit={submit}>
        <h3>Create a permission</h3>
        <Field label="Slug" hint="e.g. documents.read">
          <input required value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />
        </Field>
        <Field label="Name" hint="Empty: the slug">
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary" disabled={create.busy}>
          Create permission
        </button>
        <ErrorBox error={create.error} />
      </form>
      <Confirm
        open={deleting !== undefined}
        title={`Delete the permission “${deleting?.slug ?? ""}”?`}
        message={<p>Keys and roles holding it lose it.</p>}
        confirm="Delete permission"
        onConfirm={async () => {
          const p = deleting!;
          setDeleting(undefined);
          if (await remove.run(() => call("permissions.deletePermission", { permission: p.slug })))
            onChanged();
        }}
        onCancel={() => setDeleting(undefined)}
      />
    </section>
  );
}

function Roles({ loaded, onChanged }: { loaded: Loaded<Role>; onChanged(): void }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [permissions, setPermissions] = useState("");
  const create = useAction();
  const change = useAction();
  const [deleting, setDeleting] = useState<Role | undefined>(undefined);
  const [editing, setEditing] = useState<{ role: Role; text: string } | undefined>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    const made = await create.run(() =>
      call("permissions.createRole", {
        name: name.trim(),
        ...(description.trim() ? { description: description.trim() } : {}),
        ...(list(permissions).length ? { permissions: list(permissions) } : {}),
      }),
    );
    if (made) {
      setName("");
      setDescription("");
      setPermissions("");
      onChanged();
    }
  };
  const rows = loaded.data?.data ?? [];
  return (
    <section aria-labelledby="roles-title">
      <h2 id="roles-title">Roles</h2>
      {loaded.loading && !loaded.data ? <Loading what="roles" /> : null}
      <ErrorBox error={loaded.error} />
      <ErrorBox error={change.error} />
      {loaded.data && rows.length === 0 && (
        <Empty title="No roles yet">
          <p>A role is a named set of permissions. Create one below, or with curl:</p>
          <Curl
            operation="permissions.createRole"
            body={{ name: "reader", permissions: ["documents.read"] }}
          />
        </Empty>
      )}
      {rows.length > 0 && (
        <TableWrap label="Roles" columns={["Role", "Permissions"]} actions>
          {rows.map((r) => (
            <tr key={r.id}>
              <td>
                {r.name}
                {r.description && <div class="muted small">{r.description}</div>}
              </td>
              <td>{(r.permissions ?? []).map((p) => p.slug).join(", ") || "—"}</td>
              <td class="actions">
                <button
                  type="button"
                  onClick={() =>
                    setEditing({ role: r, text: (r.permissions ?? []).map((p) => p.slug).join(", ") })
                  }
                >
                  Permissions<span class="sr-only"> of role {r.name}</span>
                </button>{" "}
                <DeleteButton what={`role ${r.name}`} onClick={() => setDeleting(r)} />
              </td>
            </tr>
          ))}
        </TableWrap>
      )}
      {editing && (
        <form
          class="card"
          onSubmit={async (e) => {
            e.preventDefault();
            const done = await change.run(() =>
              call("permissions.setRolePermissions", {
                roleId: editing.role.id,
                permissions: list(editing.text),
              }),
            );
            if (done) {
              setEditing(undefined);
              onChanged();
            }
          }}
        >
          <h3>Permissions of {editing.role.name}</h3>
          <Field label="Permissions" hint="Slugs separated by commas; replaces the role's permissions">
            <input
              value={editing.text}
              onInput={(e) => setEditing({ ...editing, text: e.currentTarget.value })}
            />
          </Field>
          <div class="row">
            <button type="submit" class="primary" disabled={change.busy}>
              Save permissions
            </button>
            <button type="button" onClick={() => setEditing(undefined)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <form class="card" onSubmit={submit}>
        <h3>Create a role</h3>
        <Field label="Name">
          <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <Field label="Permissions" hint="Slugs separated by commas">
          <input value={permissions} onInput={(e) => setPermissions(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary" disabled={create.busy}>
          Create role
        </button>
        <ErrorBox error={create.error} />
      </form>
      <Confirm
        open={deleting !== undefined}
        title={`Delete the role “${deleting?.name ?? ""}”?`}
        message={<p>Keys holding it lose its permissions.</p>}
        confirm="Delete role"
        onConfirm={async () => {
          const r = deleting!;
          setDeleting(undefined);
          if (await change.run(() => call("permissions.deleteRole", { role: r.name }))) onChanged();
        }}
        onCancel={() => setDeleting(undefined)}
      />
    </section>
  );
}
