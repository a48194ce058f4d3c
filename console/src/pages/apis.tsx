import { useState } from "preact/hooks";
import { type ApiError, call } from "../api.ts";
import { forgetApi, knownApis, rememberApi } from "../known.ts";
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
  useLoad,
} from "../ui.tsx";

interface Row {
  apiId: string;
  name: string;
  error?: ApiError;
}

export function ApisPage() {
  const apis = useLoad(
    () =>
      Promise.all(
        knownApis().map(async (known): Promise<Row> => {
          try {
            const { data } = await call<{ id: string; name: string }>("apis.getApi", { apiId: known.apiId });
            return { apiId: data.id, name: data.name };
          } catch (err) {
            return { ...known, error: err as ApiError };
          }
        }),
      ),
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
      rememberApi({ apiId: made.data.apiId, name: name.trim() });
      setName("");
      go("apis", made.data.apiId);
    }
  };
  const submitOpen = async (e: Event) => {
    e.preventDefault();
    const found = await open.run(() =>
      call<{ id: string; name: string }>("apis.getApi", { apiId: openId.trim() }),
    );
    if (found) {
      rememberApi({ apiId: found.data.id, name: found.data.name });
      go("apis", found.data.id);
    }
  };
  const confirmDelete = async () => {
    const row = deleting!;
    setDeleting(undefined);
    const done = await remove.run(() => call("apis.deleteApi", { apiId: row.apiId }));
    if (done) {
      forgetApi(row.apiId);
      apis.reload();
    }
  };

  return (
    <>
      <h1>APIs</h1>
      <p class="muted">
        An API holds keys. Latchkey's API has no operation that lists APIs, so this page shows the ones
        created or opened in this browser; open another by its id.
      </p>
      <ErrorBox error={remove.error} />
      {apis.loading && !apis.data ? <Loading what="APIs" /> : null}
      <ErrorBox error={apis.error} />
      {apis.data && apis.data.length === 0 && (
        <Empty title="No APIs yet">
          <p>Create one below, or with curl:</p>
          <Curl operation="apis.createApi" body={{ name: "my-api" }} />
        </Empty>
      )}
      {apis.data && apis.data.length > 0 && (
        <TableWrap label="APIs" columns={["Name", "Id"]} actions>
          {apis.data.map((row) => (
            <tr key={row.apiId}>
              <td>{row.error ? row.name : <a href={href("apis", row.apiId)}>{row.name}</a>}</td>
              <td>
                <code>{row.apiId}</code>
                {row.error && <div class="muted small">{row.error.detail}</div>}
              </td>
              <td class="actions">
                {row.error ? (
                  <button
                    type="button"
                    onClick={() => {
                      forgetApi(row.apiId);
                      apis.reload();
                    }}
                  >
                    Forget
                  </button>
                ) : (
                  <DeleteButton what={`API ${row.name}`} onClick={() => setDeleting(row)} />
                )}
              </td>
            </tr>
          ))}
        </TableWrap>
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
            The API <strong>{deleting?.name}</strong> (<code>{deleting?.apiId}</code>) and all its keys are
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
