// Who holds which plan step, per namespace, kept current from the change feed: the board's roster and threads learn it
// by reading the plans that changed since they last asked, not every plan on every read.
import { holderId } from '../services/presence.js';
import { claimsOfPlan, type HeldClaim } from '../services/roster.js';
import type { RangeQuery } from '../store/types.js';
import type { Entry } from '../store/versioned-store.js';
import { FAMILY, PLAN_OWNER, ofOwner, parseKey } from './layout.js';

/** Plans read per page; more changed plans than {@link MAX_CHANGED} since the last look: all are read again. */
const PAGE = 500;
const MAX_CHANGED = 2000;
/** Namespaces whose claims are kept at most: the least recently asked is dropped first (and read whole if asked again). */
export const MAX_NAMESPACES = 100;

/** A plan with claims on steps in progress, as the board orders plans (active first, then most recently changed). */
export interface ClaimedPlan {
  planId: string;
  active: boolean;
  updatedAt: number;
  claims: HeldClaim[];
}

/** What the claims are read through: ranges, the revision and the change feed of the board's read-only view. */
interface ClaimsSource {
  list(query: Omit<RangeQuery, 'now'>): Promise<{ entries: Array<[string, Entry]> }>;
  revision(): Promise<number>;
  changes(query: { after: number; lo: string; hi: string; limit: number }): Promise<{
    changes: Array<{ key: string }>;
    revision: number;
    more: boolean;
    compacted: number;
  }>;
}

interface Index {
  /** the revision up to which the plans' changes are in */
  at: number;
  /** each plan that has claims, by storage key, and when it expires */
  plans: Map<string, ClaimedPlan & { expiresAt?: number }>;
}

/**
 * The claims on every plan of the namespaces the board has looked at most recently (up to {@link MAX_NAMESPACES}),
 * each brought up to date when asked.
 */
export class PlanClaims {
  /** least recently asked first */
  private readonly indexes = new Map<string, Index>();
  /** one catch-up at a time per namespace (later askers wait for it, then catch up from where it got) */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly source: ClaimsSource) {}

  /** The plans with claims on steps in progress as the store holds them now, in key order. */
  async plans(namespace: string): Promise<ClaimedPlan[]> {
    const index = await this.current(namespace);
    const now = Date.now();
    return [...index.plans.keys()]
      .sort()
      .map((key) => index.plans.get(key)!)
      .filter((plan) => plan.expiresAt === undefined || plan.expiresAt > now);
  }

  /** Whether any of `holders` (holder ids: agent and thread) holds a claim on a step in progress now. */
  async holdsAny(namespace: string, holders: ReadonlySet<string>): Promise<boolean> {
    return (await this.plans(namespace)).some((plan) => plan.claims.some((claim) => holders.has(holderId(claim))));
  }

  private current(namespace: string): Promise<Index> {
    const next = (this.queues.get(namespace) ?? Promise.resolve()).then(
      () => this.catchUp(namespace),
      () => this.catchUp(namespace),
    );
    this.queues.set(namespace, next);
    const done = (): void => {
      if (this.queues.get(namespace) === next) this.queues.delete(namespace);
    };
    next.then(done, done);
    return next;
  }

  private async catchUp(namespace: string): Promise<Index> {
    const index = this.indexes.get(namespace);
    if (!index) return this.rebuild(namespace);
    const range = ofOwner(namespace, FAMILY.plan, PLAN_OWNER);
    for (let read = 0; ; ) {
      const page = await this.source.changes({ after: index.at, ...range, limit: PAGE });
      read += page.changes.length;
      if (index.at < page.compacted || read > MAX_CHANGED) return this.rebuild(namespace);
      await Promise.all(
        [...new Set(page.changes.map((c) => c.key))].map(async (key) => {
          const { entries } = await this.source.list({ lo: key, hi: `${key}\u0000`, limit: 1 });
          this.put(index, namespace, key, entries[0]?.[0] === key ? entries[0][1] : undefined);
        }),
      );
      // a last page's revision is the store's when it was read: nothing of the range changed between it and the changes
      index.at = Math.max(index.at, page.revision);
      if (!page.more) return this.keep(namespace, index);
    }
  }

  /** Reads every plan of the namespace (once, or after the change log lost what changed since the last look). */
  private async rebuild(namespace: string): Promise<Index> {
    const index: Index = { at: await this.source.revision(), plans: new Map() };
    const range = ofOwner(namespace, FAMILY.plan, PLAN_OWNER);
    let after: string | undefined;
    for (;;) {
      const { entries } = await this.source.list({ ...range, ...(after !== undefined ? { after } : {}), limit: PAGE });
      for (const [key, entry] of entries) this.put(index, namespace, key, entry);
      if (entries.length < PAGE) break;
      after = entries[entries.length - 1][0];
    }
    return this.keep(namespace, index);
  }

  /** Keeps the namespace's index as the most recently asked, dropping the least recently asked beyond the bound. */
  private keep(namespace: string, index: Index): Index {
    this.indexes.delete(namespace);
    this.indexes.set(namespace, index);
    for (const oldest of this.indexes.keys()) {
      if (this.indexes.size <= MAX_NAMESPACES) break;
      this.indexes.delete(oldest);
    }
    return index;
  }

  private put(index: Index, namespace: string, key: string, entry: Entry | undefined): void {
    const planId = parseKey(namespace, key)!.key;
    const plan = entry ? claimsOfPlan(planId, entry.value) : undefined;
    if (!plan || plan.claims.length === 0) {
      index.plans.delete(key);
      return;
    }
    index.plans.set(key, {
      planId,
      active: plan.status === 'active',
      updatedAt: entry!.updatedAt,
      claims: plan.claims,
      ...(entry!.expiresAt !== undefined ? { expiresAt: entry!.expiresAt } : {}),
    });
  }
}
