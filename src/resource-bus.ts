// The change-event bus of `subscriptions/listen`: resource updates read from the store's change log, so a write
// through any process or host reaches listeners on every process that serves the store.
import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import { BlackboardError } from './errors.js';
import { ChangesService, CHANGES_MAX_LIMIT } from './services/changes.js';
import { Session } from './services/session.js';
import type { VersionedStore } from './store/versioned-store.js';
import { keysOf } from './keyspace.js';
import { DEFAULT_NAMESPACE_URI, revisionParams } from './resources.js';

const WAIT_MS = 30_000;
const RETRY_MS = 1000;

/** The URI of a changed key or plan, as resources name it. */
export function resourceUri(namespace: string | undefined, scope: string, key: string): string {
  const ns = namespace ?? DEFAULT_NAMESPACE_URI;
  return scope === 'plan'
    ? `blackboard://${ns}/plans/${encodeURIComponent(key)}`
    : `blackboard://${ns}/${encodeURIComponent(scope)}/${encodeURIComponent(key)}`;
}

/**
 * A {@link ServerEventBus} whose resource updates come from the store's change log: {@link follow} a namespace and
 * every change to it is published as `resource_updated` with its `revision` (the SDK delivers each to the listen
 * streams whose filter names the URI). A namespace is followed while any listener is subscribed; nothing is read
 * while nobody listens. Other events (`publish`) reach this process's listeners only.
 */
export class StoreEventBus implements ServerEventBus {
  private readonly listeners = new Set<(event: ServerEvent) => void>();
  private readonly followers = new Map<string, AbortController>();
  /** how many open listen streams hold each followed namespace ({@link hold}) */
  private readonly holders = new Map<string, number>();

  constructor(private readonly store: VersionedStore) {}

  publish(event: ServerEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // one listener's failure does not stop the others
      }
    }
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      if (!this.listeners.delete(listener)) return;
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Starts publishing the changes of `namespace` (from the current revision on), unless it is followed already. */
  follow(namespace: string | undefined): Promise<void> {
    const id = namespace ?? '';
    if (this.followers.has(id)) return Promise.resolve();
    const controller = new AbortController();
    this.followers.set(id, controller);
    const session = new Session(this.store, { namespace, thread: 'subscriptions', run: '', rootThread: 'subscriptions', delegateLevel: 0 });
    const changes = new ChangesService(this.store, session);
    let started!: () => void;
    const ready = new Promise<void>((resolve) => (started = resolve));
    void (async () => {
      let after: number | undefined;
      while (!controller.signal.aborted) {
        try {
          after ??= (await changes.changes({})).revision;
          started();
          const page = await changes.changes({ afterRevision: after, waitMs: WAIT_MS, limit: CHANGES_MAX_LIMIT }, controller.signal);
          for (const c of page.changes) {
            this.publish({ kind: 'resource_updated', uri: resourceUri(namespace, c.scope, c.key), params: revisionParams(c.revision) });
          }
          after = page.revision;
        } catch (error) {
          if (controller.signal.aborted) break;
          // compacted: what was missed cannot be told key by key any more; go on from now
          if (error instanceof BlackboardError && error.code === 'REVISION_COMPACTED') after = undefined;
          await new Promise((r) => setTimeout(r, RETRY_MS));
        }
      }
      started();
    })();
    const keys = keysOf(namespace);
    void this.followInboxes(namespace, keys.mailboxesRange(), (key) => keys.mailboxAgent(key), controller.signal);
    // mail kept for an agent name not on the roster yet is that agent's too
    void this.followInboxes(namespace, keys.mailboxWaitsRange(), (key) => keys.mailboxWaitAgent(key), controller.signal);
    return ready;
  }

  /**
   * Publishes `resource_updated` for `blackboard://{namespace}/inbox/{agent}` after every new entry of `range` that
   * `agentOf` says is an agent's mail.
   */
  private async followInboxes(
    namespace: string | undefined,
    { lo, hi }: { lo: string; hi: string },
    agentOf: (key: string) => string | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    let after: number | undefined;
    while (!signal.aborted) {
      try {
        after ??= await this.store.revision();
        const from = after;
        const { value: page } = await this.store.waitFor(
          (wake) => this.store.subscribeRange(lo, hi, wake),
          async () => {
            const page = await this.store.changes({ after: from, lo, hi, limit: CHANGES_MAX_LIMIT });
            return { ready: page.changes.length > 0, value: page };
          },
          { timeoutMs: WAIT_MS, signal },
        );
        for (const change of page.changes) {
          const agent = agentOf(change.key);
          if (agent === undefined || change.deleted) continue;
          const uri = `blackboard://${namespace ?? DEFAULT_NAMESPACE_URI}/inbox/${encodeURIComponent(agent)}`;
          this.publish({ kind: 'resource_updated', uri, params: revisionParams(change.revision) });
        }
        if (page.changes.length > 0) after = page.revision;
      } catch {
        if (signal.aborted) break;
        after = undefined;
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /**
   * Follows `namespace` for one listen stream until the returned release is called: the last stream of a namespace to
   * close stops following it, so namespaces nobody listens to any more cost nothing.
   */
  async hold(namespace: string | undefined): Promise<() => void> {
    const id = namespace ?? '';
    this.holders.set(id, (this.holders.get(id) ?? 0) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const left = (this.holders.get(id) ?? 1) - 1;
      if (left > 0) return void this.holders.set(id, left);
      this.holders.delete(id);
      this.followers.get(id)?.abort();
      this.followers.delete(id);
    };
    try {
      await this.follow(namespace);
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /** Stops following every namespace. */
  stop(): void {
    for (const controller of this.followers.values()) controller.abort();
    this.followers.clear();
  }
}
