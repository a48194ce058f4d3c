/**
 * Counter ids by expiry, earliest first: a binary min-heap kept in two parallel
 * arrays (a packed array of doubles and one of strings), so an entry costs two
 * array slots rather than an object. The expiry stored is the one known when
 * the id was pushed; a counter that rolled since has a later one, so the
 * caller, on popping it, checks the counter and pushes it again.
 */
export class ExpiryHeap {
  private readonly at: number[] = [];
  private readonly ids: string[] = [];

  get size(): number {
    return this.ids.length;
  }

  /** The earliest expiry held, or Infinity when empty. */
  peek(): number {
    return this.ids.length === 0 ? Number.POSITIVE_INFINITY : this.at[0]!;
  }

  push(at: number, id: string): void {
    const a = this.at;
    const ids = this.ids;
    let i = ids.length;
    a.push(at);
    ids.push(id);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent]! <= at) break;
      a[i] = a[parent]!;
      ids[i] = ids[parent]!;
      i = parent;
    }
    a[i] = at;
    ids[i] = id;
  }

  /** Removes and answers the id of the earliest expiry; undefined when empty. */
  pop(): string | undefined {
    const a = this.at;
    const ids = this.ids;
    const n = ids.length - 1;
    if (n < 0) return undefined;
    const top = ids[0]!;
    const lastAt = a.pop()!;
    const lastId = ids.pop()!;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && a[child + 1]! < a[child]!) child++;
      if (a[child]! >= lastAt) break;
      a[i] = a[child]!;
      ids[i] = ids[child]!;
      i = child;
    }
    a[i] = lastAt;
    ids[i] = lastId;
    return top;
  }
}
