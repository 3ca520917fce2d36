// plan_list: the plans a caller can see, newest first, a page at a time.
import { resolveScope } from '../context.js';
import { invalid } from '../errors.js';
import { lastPart } from '../keyspace.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { settle } from './plan-claims.js';
import { PLAN_STATUSES, decodePlan, type PlanStatus } from './plan-steps.js';
import { planView, type PlanView } from './plan-views.js';
import type { Presence } from './presence.js';
import type { Session } from './session.js';
import type { KeyRange } from '../store/types.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';

export const PLAN_LIST_DEFAULT = 20;
export const PLAN_LIST_MAX = 100;
/** how many plans of each scope `plan_list` looks at */
const SCOPE_SCAN = 1000;
/** titles are cut to this many characters in `plan_list` (plan_get has them whole) */
const LIST_TITLE_CHARS = 200;

export type PlanSummary = Omit<PlanView, 'steps' | 'createdAt' | 'updatedBy'>;
export interface PlanList {
  plans: PlanSummary[];
  nextCursor?: string;
  /** for an empty list: where plans live (tool mentions are rendered by the tool layer) */
  hint?: string;
}

/** What listing reads through: the plan service's store, keys and the signs of life claims are judged by. */
export interface PlanSource {
  readonly store: VersionedStore;
  readonly session: Session;
  readonly presence: Presence;
  reader(): Pick<StoreTx, 'get' | 'now'>;
  key(planId: string): string;
  indexRange(scopeId: string): KeyRange;
}

/**
 * The plans the caller can see, most recently changed first: those of `scope`, or without one those of global,
 * its delegation tree's root, its parent thread and its own thread. Titles are cut short; no steps.
 */
export async function listPlans(
  plans: PlanSource,
  args: { status?: PlanStatus; scope?: string; cursor?: string; limit?: number },
): Promise<PlanList> {
  if (args.status !== undefined && !(PLAN_STATUSES as readonly string[]).includes(args.status)) {
    throw invalid(`status must be one of: ${PLAN_STATUSES.join(', ')}.`, { path: 'status' });
  }
  const limit = args.limit ?? PLAN_LIST_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > PLAN_LIST_MAX)
    throw invalid(`limit must be a whole number from 1 to ${PLAN_LIST_MAX}.`, { limit, path: 'limit' });
  if (args.scope === undefined || args.scope === 'run') await plans.session.refresh(); // the thread's current run
  const who = plans.session.identity;
  const scopes =
    args.scope !== undefined
      ? [resolveScope(args.scope, who).id]
      : [
          ...new Set([
            'global',
            `parent:${who.rootThread}`,
            `thread:${who.rootThread}`,
            ...(who.parentThread ? [`thread:${who.parentThread}`] : []),
            `thread:${who.thread}`,
          ]),
        ];
  const tag = `plans:${scopes.join(',')}:${args.status ?? ''}`;
  const after = args.cursor === undefined ? undefined : decodeCursor(args.cursor, { label: tag, id: tag }, '', 'scope or status');
  // a cursor is the last plan's revision, time and id
  const [afterRevision, afterAt, afterId] =
    after === undefined
      ? [Infinity, Infinity, '']
      : ([Number(after.split(' ')[0]), Number(after.split(' ')[1]), after.split(' ')[2] ?? ''] as const);
  const found: Array<{ revision: number; at: number; plan: PlanSummary }> = [];
  const reader = plans.reader();
  for (const scopeId of scopes) {
    const { entries } = await plans.store.list({ ...plans.indexRange(scopeId), limit: SCOPE_SCAN });
    for (const [key] of entries) {
      const planId = lastPart(key);
      const entry = await plans.store.get(plans.key(planId));
      if (!entry) continue;
      const record = decodePlan(entry.value);
      if (args.status !== undefined && record.status !== args.status) continue;
      await settle(record, (h) => plans.presence.readIn(reader, h), reader.now);
      const { steps: _steps, createdAt: _c, updatedBy: _u, ...summary } = planView(planId, record, entry, new Map(), 'summary');
      if (summary.title.length > LIST_TITLE_CHARS) summary.title = `${summary.title.slice(0, LIST_TITLE_CHARS)}…`;
      found.push({ revision: entry.revision, at: entry.updatedAt, plan: summary });
    }
  }
  // The latest change first: the revision that wrote each plan orders them even within one millisecond, and the time
  // each was written orders the plans one transaction wrote (an import keeps each plan's time).
  const order = (a: (typeof found)[number], b: { revision: number; at: number; id: string }): number =>
    b.revision - a.revision || b.at - a.at || (a.plan.planId < b.id ? -1 : a.plan.planId > b.id ? 1 : 0);
  found.sort((a, b) => order(a, { ...b, id: b.plan.planId }));
  const rest = found.filter((f) => order(f, { revision: afterRevision, at: afterAt, id: afterId }) > 0);
  const page = rest.slice(0, limit);
  const out: PlanList = { plans: page.map((f) => f.plan) };
  if (rest.length > limit) {
    const last = page[page.length - 1];
    out.nextCursor = encodeCursor({ label: tag, id: tag }, '', `${last.revision} ${last.at} ${last.plan.planId}`);
  }
  if (found.length === 0) {
    // each tool mention in a sentence of its own, so a server without one of them keeps the rest
    out.hint = `No plans in ${scopes.join(', ')}${args.status ? ` with status ${args.status}` : ''}. Plans are made in scope global unless {tool:plan_create} names another. Another thread's plans: {tool:plan_list} with scope "thread:ID", a group's: "group:NAME".`;
  }
  return out;
}
