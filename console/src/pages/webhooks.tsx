import { useState } from "preact/hooks";
import { call, type Delivery, type Webhook } from "../api.ts";
import { EVENT_TYPES } from "../events.ts";
import { go, href } from "../router.ts";
import {
  Confirm,
  Curl,
  Empty,
  ErrorBox,
  Field,
  Loading,
  ShownOnce,
  TableWrap,
  useAction,
  useLoad,
  usePages,
  when,
} from "../ui.tsx";

const PAGE = 50;

/** "enabled", or "disabled" with the reason Latchkey gave, for a table cell. */
function stateText(w: Webhook): string {
  if (w.enabled) return "enabled";
  return w.disabledReason ? `disabled: ${w.disabledReason}` : "disabled";
}

export function WebhooksPage() {
  const list = usePages(
    (cursor) => call<Webhook[]>("webhooks.list", { limit: PAGE, ...(cursor ? { cursor } : {}) }),
    [],
  );
  const rows = list.rows;
  return (
    <>
      <h1>Webhooks</h1>
      <p class="muted">
        Latchkey posts the events a webhook subscribes to at its URL, signed with the webhook's secret, and
        retries a delivery that fails. A webhook whose deliveries keep failing is disabled, with the reason.
      </p>
      <ErrorBox error={list.error} />
      {!list.loaded && <Loading what="webhooks" />}
      {list.loaded && rows.length === 0 && !list.error && (
        <Empty title="No webhooks yet">
          <p>Create one below, or with curl:</p>
          <Curl
            operation="webhooks.create"
            body={{ url: "https://example.com/latchkey", events: ["key.created"] }}
          />
        </Empty>
      )}
      {rows.length > 0 && (
        <TableWrap label="Webhooks" columns={["URL", "Events", "State", "Created"]}>
          {rows.map((w) => (
            <tr key={w.webhookId}>
              <td class="url">
                <a href={href("webhooks", w.webhookId)} class="wrap">
                  {w.url}
                </a>
                {w.description && <div class="muted small">{w.description}</div>}
              </td>
              <td>{w.events.join(", ")}</td>
              <td class={w.enabled ? "" : "denied"}>{stateText(w)}</td>
              <td>{when(w.createdAt)}</td>
            </tr>
          ))}
        </TableWrap>
      )}
      {list.hasMore && (
        <button type="button" disabled={list.busy} onClick={list.more}>
          Load more webhooks
        </button>
      )}
      <CreateWebhook onCreated={list.reload} />
    </>
  );
}

function CreateWebhook({ onCreated }: { onCreated(): void }) {
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [events, setEvents] = useState<string[]>([]);
  const [enabled, setEnabled] = useState(true);
  const create = useAction();
  const [made, setMade] = useState<{ webhookId: string; secret: string } | undefined>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    setMade(undefined);
    const res = await create.run(() =>
      call<{ webhookId: string; secret: string }>("webhooks.create", {
        url: url.trim(),
        events,
        ...(description.trim() ? { description: description.trim() } : {}),
        enabled,
      }),
    );
    if (res) {
      setMade(res.data);
      setUrl("");
      setDescription("");
      setEvents([]);
      setEnabled(true);
      onCreated();
    }
  };
  const toggle = (type: string, on: boolean) =>
    setEvents((now) => (on ? [...now, type] : now.filter((t) => t !== type)));
  return (
    <>
      <form class="card form" onSubmit={submit}>
        <h2>Create a webhook</h2>
        <div class="grid2">
          <Field label="URL" hint="Where Latchkey posts the events">
            <input
              type="url"
              required
              maxLength={2048}
              spellcheck={false}
              placeholder="https://example.com/latchkey"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          </Field>
          <Field label="Description" hint="For people">
            <input
              value={description}
              maxLength={255}
              onInput={(e) => setDescription(e.currentTarget.value)}
            />
          </Field>
        </div>
        <fieldset>
          <legend>Events</legend>
          <ul class="plain checks">
            {EVENT_TYPES.map((t) => (
              <li key={t.type}>
                <label class="check">
                  <input
                    type="checkbox"
                    checked={events.includes(t.type)}
                    onChange={(e) => toggle(t.type, e.currentTarget.checked)}
                  />
                  <span>
                    <code>{t.type}</code> <span class="muted small">{t.about}</span>
                  </span>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        <label class="inline">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />{" "}
          Enabled
        </label>
        <div class="row">
          <button type="submit" class="primary" disabled={create.busy}>
            Create webhook
          </button>
        </div>
        <ErrorBox error={create.error} />
      </form>
      {made && (
        <ShownOnce
          title="Your webhook's signing secret"
          warning="This is the only time the secret is shown. Copy it now and give it to the receiver: it checks each delivery's signature with it."
          label="The signing secret"
          copy="Copy secret"
          secret={made.secret}
          testId="webhook-secret"
        >
          <p class="muted">
            Webhook id <code>{made.webhookId}</code> ·{" "}
            <a href={href("webhooks", made.webhookId)}>Open the webhook</a>
          </p>
        </ShownOnce>
      )}
    </>
  );
}

/** webhooks.list has no lookup by id: its pages are read until the webhook turns up. */
async function findWebhook(webhookId: string): Promise<Webhook | null> {
  let cursor: string | undefined;
  for (;;) {
    const res = await call<Webhook[]>("webhooks.list", { limit: 100, ...(cursor ? { cursor } : {}) });
    const found = res.data.find((w) => w.webhookId === webhookId);
    if (found) return found;
    if (!res.pagination?.hasMore || !res.pagination.cursor) return null;
    cursor = res.pagination.cursor;
  }
}

export function WebhookPage({ webhookId }: { webhookId: string }) {
  const loaded = useLoad(() => findWebhook(webhookId), [webhookId]);
  const w = loaded.data;
  return (
    <>
      <p class="crumbs">
        <a href={href("webhooks")}>Webhooks</a> /
      </p>
      <h1 class="wrap">{w?.url ?? webhookId}</h1>
      {loaded.loading && w === undefined ? <Loading what="the webhook" /> : null}
      <ErrorBox error={loaded.error} />
      {w === null && (
        <Empty title="No such webhook">
          <p>
            This workspace has no webhook <code>{webhookId}</code> that this root key can see.{" "}
            <a href={href("webhooks")}>Go to the webhooks</a>.
          </p>
        </Empty>
      )}
      {w && (
        <>
          {/* First, so that a disabled webhook says so, and why, at the top of its page. */}
          <EnabledCard w={w} onChanged={loaded.reload} />
          <WebhookDetails w={w} />
          <Deliveries webhookId={w.webhookId} />
          <DeleteWebhook w={w} />
        </>
      )}
    </>
  );
}

function WebhookDetails({ w }: { w: Webhook }) {
  return (
    <section class="card" aria-labelledby="webhook-details">
      <h2 id="webhook-details">Details</h2>
      <dl class="details">
        <dt>Webhook id</dt>
        <dd>
          <code>{w.webhookId}</code>
        </dd>
        <dt>URL</dt>
        <dd>
          <code>{w.url}</code>
        </dd>
        <dt>Events</dt>
        <dd>{w.events.join(", ")}</dd>
        <dt>Description</dt>
        <dd>{w.description || "—"}</dd>
        <dt>State</dt>
        <dd data-testid="webhook-state">{w.enabled ? "enabled" : "disabled"}</dd>
        <dt>Created</dt>
        <dd>{when(w.createdAt)}</dd>
      </dl>
      <p>
        <a href={`${href("audit")}?resourceId=${encodeURIComponent(w.webhookId)}`}>Its audit log</a>
      </p>
    </section>
  );
}

function EnabledCard({ w, onChanged }: { w: Webhook; onChanged(): void }) {
  const act = useAction();
  const toggle = async () => {
    if (await act.run(() => call("webhooks.update", { webhookId: w.webhookId, enabled: !w.enabled })))
      onChanged();
  };
  return (
    <section class="card" aria-label="Enabled">
      {!w.enabled && (
        <div class="warning" data-testid="disabled-reason">
          <p>
            <strong>This webhook is disabled</strong>: nothing is delivered to it.
          </p>
          {w.disabledReason && <p>Reason: {w.disabledReason}</p>}
        </div>
      )}
      <div class={`row wrap ${w.enabled ? "between" : "end"}`}>
        {w.enabled && (
          <p>
            This webhook is <strong>enabled</strong>: Latchkey delivers the events it subscribes to.
          </p>
        )}
        <button type="button" onClick={toggle} disabled={act.busy}>
          {w.enabled ? "Disable webhook" : "Enable webhook"}
        </button>
      </div>
      <ErrorBox error={act.error} />
    </section>
  );
}

type Status = "" | Delivery["status"];

function Deliveries({ webhookId }: { webhookId: string }) {
  const [status, setStatus] = useState<Status>("");
  const redeliver = useAction();
  const [redelivered, setRedelivered] = useState<string | undefined>(undefined);
  const list = usePages(
    (cursor) =>
      call<Delivery[]>("webhooks.listDeliveries", {
        webhookId,
        limit: PAGE,
        ...(cursor ? { cursor } : {}),
        ...(status ? { status } : {}),
      }),
    [webhookId, status],
  );
  const rows = list.rows;
  const again = async (d: Delivery) => {
    setRedelivered(undefined);
    const res = await redeliver.run(() =>
      call<{ deliveryId: string }>("webhooks.redeliver", { webhookId, deliveryId: d.deliveryId }),
    );
    if (res) {
      setRedelivered(`Event ${d.eventId} is delivered again as ${res.data.deliveryId}.`);
      list.reload();
    }
  };
  return (
    <section class="card" aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      <div class="row wrap">
        <Field label="Status">
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value as Status)}>
            <option value="">any</option>
            <option value="pending">pending</option>
            <option value="delivered">delivered</option>
            <option value="failed">failed</option>
          </select>
        </Field>
        <button type="button" class="field-button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={list.error} />
      <ErrorBox error={redeliver.error} />
      <p role="status" class="small">
        {redelivered ?? ""}
      </p>
      {!list.loaded && <Loading what="deliveries" />}
      {list.loaded && rows.length === 0 && !list.error && (
        <p class="muted">{status ? `No ${status} deliveries.` : "No deliveries yet."}</p>
      )}
      {rows.length > 0 && (
        <TableWrap label="Deliveries" columns={["Event", "Status", "Created", "Attempts"]} actions>
          {rows.map((d) => (
            <tr key={d.deliveryId}>
              <td>
                <code class="nowrap">{d.eventType}</code>
                <div class="muted small">
                  <code>{d.eventId}</code>
                </div>
              </td>
              <td>
                <span class={d.status === "failed" ? "denied" : d.status === "delivered" ? "ok" : ""}>
                  {d.status}
                </span>
                <div class="muted small">
                  {d.status === "delivered" && d.deliveredAt != null
                    ? `at ${when(d.deliveredAt)}`
                    : d.status === "pending" && d.nextAttemptAt != null
                      ? `next attempt ${when(d.nextAttemptAt)}`
                      : ""}
                </div>
              </td>
              <td>{when(d.createdAt)}</td>
              <td>
                {d.attempts.length === 0 ? (
                  "none yet"
                ) : (
                  <ol class="attempts">
                    {d.attempts.map((a) => (
                      <li key={a.attemptedAt}>
                        {a.statusCode != null ? (
                          <span class={a.statusCode >= 200 && a.statusCode < 300 ? "ok" : "denied"}>
                            {a.statusCode}
                          </span>
                        ) : (
                          <span class="denied">no answer</span>
                        )}
                        {a.latencyMs != null ? ` in ${a.latencyMs} ms` : ""}
                        {a.error ? `: ${a.error}` : ""}
                        <span class="muted small"> · {when(a.attemptedAt)}</span>
                      </li>
                    ))}
                  </ol>
                )}
              </td>
              <td class="actions">
                <button type="button" disabled={redeliver.busy} onClick={() => again(d)}>
                  Redeliver
                  <span class="sr-only">
                    {" "}
                    {d.eventType} {d.eventId}
                  </span>
                </button>
              </td>
            </tr>
          ))}
        </TableWrap>
      )}
      {list.hasMore && (
        <button type="button" disabled={list.busy} onClick={list.more}>
          Load more deliveries
        </button>
      )}
    </section>
  );
}

function DeleteWebhook({ w }: { w: Webhook }) {
  const [asking, setAsking] = useState(false);
  const act = useAction();
  const remove = async () => {
    setAsking(false);
    if (await act.run(() => call("webhooks.delete", { webhookId: w.webhookId }))) go("webhooks");
  };
  return (
    <section class="card danger-zone" aria-labelledby="delete-webhook">
      <h2 id="delete-webhook">Delete</h2>
      <button type="button" class="danger" onClick={() => setAsking(true)}>
        Delete webhook
      </button>
      <ErrorBox error={act.error} />
      <Confirm
        open={asking}
        title="Delete this webhook?"
        message={
          <p>
            Nothing more is delivered to <code>{w.url}</code> (<code>{w.webhookId}</code>). This cannot be
            undone.
          </p>
        }
        confirm="Delete webhook"
        onConfirm={remove}
        onCancel={() => setAsking(false)}
      />
    </section>
  );
}
