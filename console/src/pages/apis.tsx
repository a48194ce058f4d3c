import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { go, href } from "../router.ts";
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
  usePages,
  when,
} from "../ui.tsx";

interface Row {
  id: string;
  name: string;
  createdAt: number;
}

export function ApisPage() {
  // Every API the root key may read, 100 a page (apis.listApis).
  const apis = usePages(
    (cursor) => call<Row[]>("apis.listApis", { limit: 100, ...(cursor ? { cursor } : {}) }),
    [],
  );
  const [name, setName] = useState("");
  const [openId, setOpenId] = useState("");
  const create = useAction();
  const open = useAction();
  const remove = useAction();
  const [deleting, setDeleting] = useState<Row | undefined>(undefined);

  const submitCreate = async (e: Event) => {
    e.preventDefault();
    const made = await create.run(() => call<{ apiId: string }>("apis.createApi", { name: name.trim() }));
    if (made) {
      setName("");
      go("apis", made.data.apiId);
    }
  };
  const submitOpen = async (e: Event) => {
    e.preventDefault();
    const found = await open.run(() =>
      call<{ id: string; name: string }>("apis.getApi", { apiId: openId.trim() }),
    );
    if (found) go("apis", found.data.id);
  };
  const confirmDelete = async () => {
    const row = deleting!;
    setDeleting(undefined);
    const done = await remove.run(() => call("apis.deleteApi", { apiId: row.id }));
    if (done) apis.reload();
  };

  return (
    <>
      <h1>APIs</h1>
      <p class="muted">
        An API holds keys. These are the APIs your root key may read (<code>apis.listApis</code>).
      </p>
      <ErrorBox error={remove.error} />
      {!apis.loaded ? <Loading what="APIs" /> : null}
      <ErrorBox error={apis.error} />
      {apis.loaded && !apis.error && apis.rows.length === 0 && (
        <Empty title="No APIs yet">
          <p>Create one below, or with curl:</p>
          <Curl operation="apis.createApi" body={{ name: "my-api" }} />
        </Empty>
      )}
      {apis.rows.length > 0 && (
        <TableWrap label="APIs" columns={["Name", "Id", "Created"]} actions>
          {apis.rows.map((row) => (
            <tr key={row.id}>
              <td>
                <a href={href("apis", row.id)}>{row.name}</a>
              </td>
              <td>
                <code>{row.id}</code>
              </td>
              <td>{when(row.createdAt)}</td>
              <td class="actions">
                <DeleteButton what={`API ${row.name}`} onClick={() => setDeleting(row)} />
              </td>
            </tr>
          ))}
        </TableWrap>
      )}
      {apis.hasMore && (
        <button type="button" onClick={apis.more} disabled={apis.busy}>
          Load more APIs
        </button>
      )}
      <div class="grid2">
        <form class="card" onSubmit={submitCreate}>
          <h2>Create an API</h2>
          <Field label="Name" hint="3 to 256 characters">
            <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <button type="submit" class="primary" disabled={create.busy}>
            Create API
          </button>
          <ErrorBox error={create.error} />
        </form>
        <form class="card" onSubmit={submitOpen}>
          <h2>Open an API by id</h2>
          <Field label="API id">
            <input required value={openId} class="mono" onInput={(e) => setOpenId(e.currentTarget.value)} />
          </Field>
          <button type="submit" disabled={open.busy}>
            Open
          </button>
          <ErrorBox error={open.error} />
        </form>
      </div>
      <Confirm
        open={deleting !== undefined}
        title={`Delete the API “${deleting?.name ?? ""}”?`}
        message={
          <p>
            The API <strong>{deleting?.name}</strong> (<code>{deleting?.id}</code>) and all its keys are
            deleted: its keys stop verifying at once. This cannot be undone.
          </p>
        }
        confirm={`Delete ${deleting?.name ?? ""}`}
        onConfirm={confirmDelete}
        onCancel={() => setDeleting(undefined)}
      />
    </>
  );
}
