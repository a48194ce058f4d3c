// The root key lives in this tab's sessionStorage only: never in a URL, a cookie, localStorage or a log.
const KEY = "latchkey.rootKey";

export function rootKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function signIn(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
}
