// Latchkey's API lists no APIs and no rate-limit namespaces, so the console remembers the ones created
// or opened in this browser (ids and names only, never a key). A remembered API that the signed-in
// root key cannot see answers 404 and is shown as such.
const APIS = "latchkey.apis";
const NAMESPACES = "latchkey.namespaces";

export interface KnownApi {
  apiId: string;
  name: string;
}

function read<T>(key: string): T[] {
  try {
    const value = JSON.parse(localStorage.getItem(key) ?? "[]");
    return Array.isArray(value) ? value : [];
  } catch {
    return [];
  }
}

export const knownApis = (): KnownApi[] => read<KnownApi>(APIS);

export function rememberApi(api: KnownApi): void {
  const others = knownApis().filter((a) => a.apiId !== api.apiId);
  localStorage.setItem(APIS, JSON.stringify([api, ...others]));
}

export function forgetApi(apiId: string): void {
  localStorage.setItem(APIS, JSON.stringify(knownApis().filter((a) => a.apiId !== apiId)));
}

export const knownNamespaces = (): string[] => read<string>(NAMESPACES);

export function rememberNamespace(namespace: string): void {
  const others = knownNamespaces().filter((n) => n !== namespace);
  localStorage.setItem(NAMESPACES, JSON.stringify([namespace, ...others]));
}

export function forgetNamespace(namespace: string): void {
  localStorage.setItem(NAMESPACES, JSON.stringify(knownNamespaces().filter((n) => n !== namespace)));
}
