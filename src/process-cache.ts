// Values worked out once per process for a key (tool selections, listings, instructions), a bounded number kept.

/** A cache of at most `limit` entries; the oldest goes first when it is full. */
export class ProcessCache<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly limit = 64) {}

  /** The value for `key`, made by `make` the first time it is asked for. */
  get(key: string, make: () => V): V {
    if (this.entries.has(key)) return this.entries.get(key)!;
    if (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value!);
    const value = make();
    this.entries.set(key, value);
    return value;
  }
}
