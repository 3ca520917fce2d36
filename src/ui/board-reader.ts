// Reads one namespace's board — scopes and keys, plans, threads — through a read-only view of the store.
import type { z } from 'zod';
import type { RangeQuery } from '../store/types.js';
import type { Entry, VersionedStore } from '../store/versioned-store.js';
import {
  FAMILY,
  PLAN_OWNER,
  THREAD_OWNER,
  allNamespaces,
  allOwners,
  boardNamespaceOf,
  historyKey,
  historySeq,
  ofOwner,
  parseKey,
  recordsOf,
  userKeys,
  type KeyRange,
  type ParsedKey,
  type Section,
} from './layout.js';
import { BudgetRecord } from '../services/budget.js';
import { AnswerRecord } from '../services/finalizer.js';
import { HistoryRecord } from '../services/history.js';
import { LifecycleRecord } from '../services/lifecycle.js';
import { settle } from '../services/plan-claims.js';
import { PlanRecordSchema } from '../services/plan-steps.js';
import { holderId, PresenceRecord, type Holder } from '../services/presence.js';
import { ThreadInfoRecord } from '../services/thread-info.js';
import { deriveStatus, heldOf, heldSteps } from './board-status.js';
import type { PlanClaims } from './board-claims.js';
import { readTeam } from './board-team.js';
import { DEFAULTS } from '../config.js';
import type { RosterTimes } from '../services/roster.js';
import {
  MAX_TEXT_CHARS,
  MAX_VALUE_CHARS,
  cutJson,
  cutText,
  type BoardView,
  type HistoryView,
  type PlanView,
  type ScopeView,
  type ThreadView,
  scopesOf,
  withStepsBounded,
} from './board-views.js';

export type * from './board-views.js';

/**
 * What the board may do with the store: read records and ranges, and read the revision. The board is given only
 * this (see {@link readOnlyView}), so no code path of the UI can write.
 */
export interface BoardSource {
  list(query: Omit<RangeQuery, 'now'>): Promise<{ entries: Array<[string, Entry]>; revision: number }>;
  revision(): Promise<number>;
  /** The keys of `[lo, hi)` changed after revision `after` (the change feed), oldest first. */
  changes(query: { after: number; lo: string; hi: string; limit: number }): Promise<{
    changes: Array<{ key: string; revision: number; version: number; deleted: boolean }>;
    revision: number;
    more: boolean;
    compacted: number;
  }>;
  /** Calls `listener` after every commit (by any process) that may have changed `[lo, hi)`; returns the unsubscribe. */
  subscribeRange(lo: string, hi: string, listener: () => void): () => void;
}

/** The store methods the board reads through. */
export type ReadableStore = Pick<VersionedStore, 'list' | 'revision' | 'subscribeRange' | 'changes'>;

/** A frozen object holding only the read methods of `store`: the store itself stays out of the UI's reach. */
export function readOnlyView(store: ReadableStore): BoardSource {
  return Object.freeze({
    list: (query: Omit<RangeQuery, 'now'>) => store.list(query),
    revision: () => store.revision(),
    changes: (query: { after: number; lo: string; hi: string; limit: number }) => store.changes(query),
    subscribeRange: (lo: string, hi: string, listener: () => void) => store.subscribeRange(lo, hi, listener),
  });
}

/** Values are shown as JSON text cut at this many characters. */
const MAX_KEYS = 2000;
const MAX_PLANS = 200;
const MAX_THREAD_RECORDS = 5000;
const MAX_THREADS = 60;
const HISTORY_SHOWN = 15;
const MAX_NAMESPACES = 200;
const PAGE = 500;

/** Decodes a stored value with the schema of the service that writes it; a record of an unexpected shape is left out rather than crashing the board. */
function decode<T>(schema: z.ZodType<T>, entry: Entry | undefined): T | undefined {
  if (!entry) return undefined;
  const parsed = schema.safeParse(entry.value);
  return parsed.success ? parsed.data : undefined;
}

/** Reads boards from a {@link BoardSource}. Stateless: every call reads the store afresh. */
export class BoardReader {
  constructor(
    private readonly source: BoardSource,
    /** the roster's clocks (`--claim-lease`, `--roster-window`); the defaults when not given */
    private readonly times: RosterTimes = { leaseMs: DEFAULTS.claimLeaseSeconds * 1000, windowMs: DEFAULTS.rosterWindowSeconds * 1000 },
    /** the claims on plans, kept current (the board server's): the roster reads them rather than every plan */
    private readonly claims?: PlanClaims,
  ) {}

  /** The namespaces that hold any record, in key order (found by skipping from one namespace to the next). */
  async namespaces(): Promise<string[]> {
    const found: string[] = [];
    let lo = allNamespaces.lo;
    while (found.length < MAX_NAMESPACES) {
      const { entries } = await this.source.list({ lo, hi: allNamespaces.hi, limit: 1 });
      if (entries.length === 0) break;
      const namespace = boardNamespaceOf(entries[0][0]);
      if (namespace === undefined) break;
      found.push(namespace);
      lo = recordsOf(namespace).hi;
    }
    return found;
  }

  /**
   * The sections of a namespace's board. `recentKeys`: only that many keys, the most recently changed (all of them are
   * counted in `keysTotal`; the others' values are never made into views).
   */
  async board(namespace: string, sections: readonly Section[], options: { recentKeys?: number } = {}): Promise<BoardView> {
    const view: BoardView = { namespace, revision: await this.source.revision(), at: Date.now(), truncated: [] };
    const wantThreads = sections.includes('threads');
    const wantPlans = sections.includes('plans');
    const signs = wantPlans || wantThreads ? await this.presence(namespace) : new Map<string, PresenceRecord>();
    // the claims kept current (when this reader has them) spare the roster and the threads a read of every plan
    const claimed = (wantPlans || wantThreads) && this.claims ? await this.claims.plans(namespace) : undefined;
    const claims = claimed?.flatMap((p) => p.claims);
    const [scopes, plans, threads, team] = await Promise.all([
      sections.includes('scopes') ? this.scopes(namespace, options.recentKeys) : undefined,
      wantPlans || (wantThreads && !claimed) ? this.plans(namespace, signs) : undefined,
      wantThreads ? this.threads(namespace) : undefined,
      // the roster follows calls and claims (plans), the messages move the threads section
      wantPlans || wantThreads ? readTeam(this.source, namespace, this.times, claims) : undefined,
    ]);
    if (team) view.team = team;
    // A thread's activity comes from its claims and calls as well as its records.
    if (threads) deriveStatus(threads.threads, claimed ? heldOf(claimed, signs) : heldSteps(plans?.plans ?? []), signs.values());
    if (scopes) {
      view.scopes = scopes.scopes;
      if (options.recentKeys !== undefined) view.keysTotal = scopes.total;
      if (scopes.truncated) view.truncated.push('scopes');
    }
    if (plans && sections.includes('plans')) {
      // cut after the threads' activity is derived, which follows every claim
      view.plans = withStepsBounded(plans.plans);
      if (plans.truncated) view.truncated.push('plans');
    }
    if (threads) {
      view.threads = threads.threads;
      if (threads.total > threads.threads.length) view.threadsTotal = threads.total;
      if (threads.truncated) view.truncated.push('threads');
    }
    return view;
  }

  /**
   * The user keys of the namespace, grouped by scope: `global` first, then by name. With `recent`, only that many of
   * them, the most recently changed; `total` counts every key read.
   */
  async scopes(namespace: string, recent?: number): Promise<{ scopes: ScopeView[]; truncated: boolean; total: number }> {
    const { entries, truncated } = await this.listAll(userKeys(namespace), MAX_KEYS);
    return { ...scopesOf(namespace, entries, recent), truncated };
  }

  /** The namespace's plans: active ones first, then the most recently changed. */
  async plans(namespace: string, signs?: Map<string, PresenceRecord>): Promise<{ plans: PlanView[]; truncated: boolean }> {
    const { entries, truncated } = await this.listAll(ofOwner(namespace, FAMILY.plan, PLAN_OWNER), MAX_PLANS);
    const plans: PlanView[] = [];
    // Claims whose holders stopped are shown as lapsed (pending, one attempt more), as the plan tools show them.
    const presence = signs ?? (await this.presence(namespace));
    const now = Date.now();
    for (const [storageKey, entry] of entries) {
      const record = decode(PlanRecordSchema, entry);
      if (!record) continue;
      const { leaseUntil } = await settle(record, async (h: Holder) => presence.get(holderId(h)), now, true);
      plans.push({
        planId: parseKey(namespace, storageKey)!.key,
        title: record.title,
        status: record.status,
        scope: record.scope,
        steps: record.steps.map(({ claim, lost: _lost, ...whole }) => {
          const step = {
            ...whole,
            content: cutText(whole.content, MAX_TEXT_CHARS),
            ...(whole.note !== undefined ? { note: cutText(whole.note, MAX_TEXT_CHARS) } : {}),
          };
          const until = leaseUntil.get(step.id);
          return claim && until !== undefined ? { ...step, claim: { thread: claim.thread, fence: claim.fence, leaseUntil: until } } : step;
        }),
        version: entry.version,
        ...(record.createdAt !== undefined ? { createdAt: record.createdAt } : {}),
        updatedAt: entry.updatedAt,
        updatedBy: entry.updatedBy,
        ...(entry.expiresAt !== undefined ? { expiresAt: entry.expiresAt } : {}),
      });
    }
    plans.sort((a, b) => Number(b.status === 'active') - Number(a.status === 'active') || b.updatedAt - a.updatedAt);
    return { plans, truncated };
  }

  /** The callers' signs of life, by agent and thread. */
  private async presence(namespace: string): Promise<Map<string, PresenceRecord>> {
    const { entries } = await this.listAll(allOwners(namespace, FAMILY.presence), MAX_THREAD_RECORDS);
    const presence = new Map<string, PresenceRecord>();
    for (const [, entry] of entries) {
      const sign = decode(PresenceRecord, entry);
      if (sign) presence.set(holderId(sign), sign);
    }
    return presence;
  }

  /**
   * The namespace's threads, most recently active first: each family is read with one range over all threads,
   * then the recent history of the threads shown.
   */
  async threads(namespace: string): Promise<{ threads: ThreadView[]; truncated: boolean; total: number }> {
    const [metas, lifecycles, budgets, finals, seqs] = await Promise.all([
      this.listAll(ofOwner(namespace, FAMILY.thread, THREAD_OWNER), MAX_THREAD_RECORDS),
      this.listAll(allOwners(namespace, FAMILY.lifecycle), MAX_THREAD_RECORDS),
      this.listAll(allOwners(namespace, FAMILY.budget), MAX_THREAD_RECORDS),
      this.listAll(allOwners(namespace, FAMILY.final), MAX_THREAD_RECORDS),
      this.listAll(allOwners(namespace, FAMILY.historySeq), MAX_THREAD_RECORDS),
    ]);
    // Family records name their thread as the owner; thread records name it as the key.
    const owner = (storageKey: string): string => {
      const parsed = parseKey(namespace, storageKey) as Extract<ParsedKey, { kind: 'family' }>;
      return parsed.owner;
    };
    const threads = new Map<string, ThreadView>();
    const thread = (id: string): ThreadView => {
      let t = threads.get(id);
      if (!t) {
        t = { thread: id, state: 'loading', budgets: [], history: [], lastSeq: 0, lastActivity: 0 };
        threads.set(id, t);
      }
      return t;
    };
    // The agent of a thread is who last wrote its own records (a child's budget step also writes its ancestors' budgets).
    const touch = (t: ThreadView, entry: Entry, own = true): void => {
      if (entry.updatedAt < t.lastActivity) return;
      t.lastActivity = entry.updatedAt;
      if (own) t.agent = entry.updatedBy;
    };
    for (const [storageKey, entry] of metas.entries) {
      const info = decode(ThreadInfoRecord, entry);
      if (!info) continue;
      const t = thread(parseKey(namespace, storageKey)!.key);
      Object.assign(t, info);
      touch(t, entry);
    }
    for (const [storageKey, entry] of lifecycles.entries) {
      const record = decode(LifecycleRecord, entry);
      if (!record) continue;
      const t = thread(owner(storageKey));
      touch(t, entry);
      // A run that has not reported yet is loading; an earlier run's state is not this run's.
      if (t.run === undefined || record.run === t.run) {
        t.state = record.state;
        t.stateAt = entry.updatedAt;
        if (record.reason !== undefined) t.reason = cutText(record.reason, MAX_TEXT_CHARS);
        t.run ??= record.run;
      }
    }
    for (const [storageKey, entry] of budgets.entries) {
      const record = decode(BudgetRecord, entry);
      if (!record) continue;
      const t = thread(owner(storageKey));
      touch(t, entry, false);
      t.budgets.push({
        name: parseKey(namespace, storageKey)!.key,
        current: record.current,
        ...(record.max !== undefined ? { max: record.max } : {}),
      });
    }
    for (const [storageKey, entry] of finals.entries) {
      const record = decode(AnswerRecord, entry);
      if (!record) continue;
      const t = thread(owner(storageKey));
      touch(t, entry);
      t.finalAnswer = {
        content: cutText(record.content, MAX_VALUE_CHARS),
        ...(record.metadata !== undefined ? { metadata: cutJson(record.metadata, MAX_TEXT_CHARS) } : {}),
        run: record.run,
        setAt: entry.updatedAt,
        setBy: entry.updatedBy,
      };
    }
    for (const [storageKey, entry] of seqs.entries) {
      if (typeof entry.value !== 'number') continue;
      const t = thread(owner(storageKey));
      touch(t, entry);
      t.lastSeq = entry.value;
    }
    const all = [...threads.values()].sort((a, b) => b.lastActivity - a.lastActivity || (a.thread < b.thread ? -1 : 1));
    const shown = all.slice(0, MAX_THREADS);
    await Promise.all(shown.map(async (t) => (t.history = await this.history(namespace, t.thread, t.lastSeq))));
    const truncated = all.length > MAX_THREADS || [metas, lifecycles, budgets, finals, seqs].some((r) => r.truncated);
    return { threads: shown, truncated, total: all.length };
  }

  /** The last {@link HISTORY_SHOWN} events of a thread, oldest first. */
  private async history(namespace: string, thread: string, lastSeq: number): Promise<HistoryView[]> {
    if (lastSeq === 0) return [];
    const from = lastSeq - HISTORY_SHOWN;
    const { entries } = await this.source.list({
      ...ofOwner(namespace, FAMILY.history, thread),
      ...(from > 0 ? { after: historyKey(namespace, thread, from) } : {}),
      limit: HISTORY_SHOWN,
    });
    const out: HistoryView[] = [];
    for (const [storageKey, entry] of entries) {
      const record = decode(HistoryRecord, entry);
      if (!record) continue;
      out.push({
        seq: historySeq(storageKey),
        kind: record.kind,
        content: cutText(record.content, MAX_TEXT_CHARS),
        ...(record.data !== undefined ? { data: cutJson(record.data, MAX_TEXT_CHARS) } : {}),
        at: entry.updatedAt,
        by: entry.updatedBy,
      });
    }
    return out;
  }

  private async listAll(range: KeyRange, cap: number): Promise<{ entries: Array<[string, Entry]>; truncated: boolean }> {
    const entries: Array<[string, Entry]> = [];
    let after: string | undefined;
    for (;;) {
      const limit = Math.min(PAGE, cap + 1 - entries.length);
      const page = await this.source.list({ ...range, ...(after !== undefined ? { after } : {}), limit });
      entries.push(...page.entries);
      if (entries.length > cap) return { entries: entries.slice(0, cap), truncated: true };
      if (page.entries.length < limit) return { entries, truncated: false };
      after = page.entries[page.entries.length - 1][0];
    }
  }
}
