// Per-key turn-taking inside one process, for optimistic backends whose same-key transactions would only collide.
/**
 * Per-key locks inside this process. Transactions of one process that read the same keys would only make each
 * other re-run, so they take turns here and compete only with other processes. Keys are taken all at once in one
 * order, so two transactions never wait on each other. The locks only spare work (commits are checked by Redis
 * either way), so a transaction that waited too long — Redis hangs under the holder — goes ahead without them.
 */
export class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async acquire(keys: Iterable<string>, waitMs: number): Promise<() => void> {
    const taking = this.take([...new Set(keys)].sort());
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), waitMs)));
    const release = await Promise.race([taking, gaveUp]);
    clearTimeout(timer);
    if (release) return release;
    void taking.then((late) => late());
    return () => {};
  }

  private async take(keys: string[]): Promise<() => void> {
    const releases: Array<() => void> = [];
    for (const key of keys) {
      const previous = this.tails.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const tail = previous.then(() => mine);
      this.tails.set(key, tail);
      await previous;
      releases.push(() => {
        release();
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
    }
    return () => {
      for (const release of releases) release();
    };
  }
}
