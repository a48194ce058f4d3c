import { call } from "./api.ts";

// What the signed-in root key may read, from Latchkey's list operations (apis.listApis and
// ratelimits.listNamespaces, Latchkey's additions to Unkey's API): the same in every browser.

export interface KnownApi {
  apiId: string;
  name: string;
}

export interface Namespace {
  id: string;
  name: string;
}

/** Pages read at most, 100 entries each: a menu of thousands is no menu, and a page that says so is better. */
const MAX_PAGES = 20;

async function all<T>(operation: string): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await call<T[]>(operation, { limit: 100, ...(cursor ? { cursor } : {}) });
    out.push(...res.data);
    cursor = res.pagination?.cursor;
    if (!res.pagination?.hasMore || !cursor) break;
  }
  return out;
}

/** Every API the signed-in root key may read (apis.listApis, page after page). */
export const allApis = async (): Promise<KnownApi[]> =>
  (await all<{ id: string; name: string }>("apis.listApis")).map((a) => ({ apiId: a.id, name: a.name }));

/** Every rate-limit namespace the signed-in root key may read (ratelimits.listNamespaces, page after page). */
export const allNamespaces = (): Promise<Namespace[]> => all<Namespace>("ratelimits.listNamespaces");
