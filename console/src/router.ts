import { useEffect, useState } from "preact/hooks";

// Routes live in the fragment (#/apis/…): the server serves one page, and no route carries a secret.
export function useRoute(): string[] {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash
    .replace(/^#\/?/, "")
    .split("?")[0]!
    .split("/")
    .filter(Boolean)
    .map((part) => decodeURIComponent(part));
}

/** The href of a route: href("apis", id) is "#/apis/<id>". */
export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join("/")}`;

export function go(...parts: string[]): void {
  location.hash = href(...parts);
}

/** The query of the route's fragment: #/analytics?apiId=x gives {apiId: "x"}. */
export function routeParams(): URLSearchParams {
  const q = location.hash.indexOf("?");
  return new URLSearchParams(q === -1 ? "" : location.hash.slice(q + 1));
}
