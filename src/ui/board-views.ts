// What the board shows, as the JSON the page receives (keys, scopes, plans and steps, threads, history), and its cuts.
import { done } from '../services/plan-steps.js';
import type { Json } from '../store/types.js';
import type { Entry } from '../store/versioned-store.js';
import type { TeamView } from './board-team.js';
import { parseKey, type Section } from './layout.js';

/** A key as the board shows it. The value is JSON text, cut at MAX_VALUE_CHARS characters. */
export interface KeyView {
  key: string;
  value: string;
  /** the value's JSON size in characters, and whether `value` was cut */
  size: number;
  cut: boolean;
  version: number;
  updatedBy: string;
  updatedAt: number;
  expiresAt?: number;
}

export interface ScopeView {
  scope: string;
  keys: KeyView[];
}

export interface StepView {
  id: string;
  content: string;
  status: string;
  owner?: string;
  blockedBy?: string[];
  note?: string;
  /** how many claims on the step lapsed */
  attempts?: number;
  /** the live claim: its holder's thread, fence and when its lease ends (epoch ms) */
  claim?: { thread: string; fence: number; leaseUntil: number };
}

export interface PlanView {
  planId: string;
  title: string;
  status: string;
  scope: string;
  steps: StepView[];
  /** when some steps are left out (the board's bound on steps, or a tool reply's on bytes): how many it has and how many are done */
  stepCounts?: { total: number; done: number };
  version: number;
  createdAt?: number;
  updatedAt: number;
  updatedBy: string;
  expiresAt?: number;
}

export interface HistoryView {
  seq: number;
  kind: string;
  content: string;
  data?: Json;
  at: number;
  by: string;
}

export interface ThreadView {
  thread: string;
  parent?: string;
  root?: string;
  level?: number;
  runs?: number;
  /** the thread's current run */
  run?: string;
  /** the current run's lifecycle state (`loading` until it reports) */
  state: string;
  /**
   * What the thread is doing, from what it does rather than the lifecycle a model may never drive: `done` (a final
   * answer for its run, or finished), `needs input`, `error`, `paused`, `working` (holds a live claim or called within the last
   * minute), `stopped`, `quiet` (no call for a while).
   */
  activity?: string;
  /** when its agent last made any call (its sign of life) */
  lastSeen?: number;
  /** the plan steps it holds */
  holds?: Array<{ planId: string; step: string; leaseUntil: number }>;
  /** how many more steps it holds than `holds` lists (a board within a tool reply's bound) */
  holdsHidden?: number;
  reason?: string;
  stateAt?: number;
  /** who last wrote the thread's records */
  agent?: string;
  budgets: Array<{ name: string; current: number; max?: number }>;
  finalAnswer?: { content: string; metadata?: Json; run: string; setAt: number; setBy: string };
  /** the most recent events, oldest first */
  history: HistoryView[];
  lastSeq: number;
  lastActivity: number;
}

/** A namespace's board, or the sections asked for. */
export interface BoardView {
  namespace: string;
  /** the store revision read before the sections: the board shows at least this */
  revision: number;
  /** the server's clock when read (leases and ages are shown against it) */
  at?: number;
  scopes?: ScopeView[];
  plans?: PlanView[];
  threads?: ThreadView[];
  /** how many threads the namespace has, when `threads` holds only the most recently active */
  threadsTotal?: number;
  /** how many keys were read, when `scopes` holds only the most recently changed of them */
  keysTotal?: number;
  /** sections that hold only the first part of what the store has */
  truncated: Section[];
  /** the roster and the newest messages, read with the plans or threads, when the namespace has either */
  team?: TeamView;
}

/** A board as the board tools return it: its sections cut short, with how many of each were left out. */
export interface BoardSnapshot extends BoardView {
  /** the server's clock when read (leases and ages are shown against it) */
  at: number;
  /** how many keys, plans and threads the store holds beyond those shown */
  hidden: { keys: number; plans: number; threads: number };
  /** the sections read */
  sections: Section[];
  timedOut?: boolean;
}

/** How much of a key's value, as JSON text, and of a final answer's content the board shows, in characters. */
export const MAX_VALUE_CHARS = 4000;
/**
 * How much of a text (an event's content, a step's content or note, a state's reason) and of JSON (an event's data, a
 * final answer's metadata) the board shows, in characters; the rest is cut with "…".
 */
export const MAX_TEXT_CHARS = 1000;

/**
 * The plan with at most `keep` of its steps shown, in plan order: its finished steps are left out first (the earliest
 * first), then its last ones, and `stepCounts` says how many steps it has and how many are done. Unchanged when all fit.
 */
export function withStepsShown(plan: PlanView, keep: number): PlanView {
  if (plan.steps.length <= keep) return plan;
  const stepCounts = plan.stepCounts ?? { total: plan.steps.length, done: plan.steps.filter(done).length };
  let n = plan.steps.length - keep;
  const finished = new Set(plan.steps.filter(done).slice(0, n));
  n -= finished.size;
  const kept = plan.steps.filter((s) => !finished.has(s));
  return { ...plan, steps: kept.slice(0, kept.length - n), stepCounts };
}

/**
 * How many steps the board shows of one plan, and of all the plans it shows (active ones first, then the most
 * recently changed): a plan's finished steps are left out first, then its last ones, and it says how many it has.
 */
export const STEPS_SHOWN = { plan: 100, total: 1000 } as const;

/**
 * How many steps each plan shows, of plans with `sizes` steps: as many as it has up to the same number for every
 * plan, at most {@link STEPS_SHOWN}.plan, and {@link STEPS_SHOWN}.total in all (a step left over goes to the plans first
 * in order).
 */
function stepsShown(sizes: number[]): number[] {
  const sum = (level: number): number => sizes.reduce((n, size) => n + Math.min(size, level), 0);
  let level = STEPS_SHOWN.plan;
  while (level > 0 && sum(level) > STEPS_SHOWN.total) level--;
  let left = STEPS_SHOWN.total - sum(level);
  return sizes.map((size) => {
    const extra = size > level && level < STEPS_SHOWN.plan && left > 0 ? 1 : 0;
    left -= extra;
    return Math.min(size, level) + extra;
  });
}

/** The plans (in the order shown) with their steps within {@link STEPS_SHOWN}. */
export function withStepsBounded(plans: PlanView[]): PlanView[] {
  const shown = stepsShown(plans.map((p) => p.steps.length));
  return plans.map((plan, i) => withStepsShown(plan, shown[i]));
}

/** A key as the board shows it with at most `max` characters of its value (`cut` when shortened). */
export const cutKey = (k: KeyView, max: number): KeyView => (k.value.length > max ? { ...k, value: k.value.slice(0, max), cut: true } : k);

/** A text as the board shows it: cut at `max` characters, with "…" when cut. */
export const cutText = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text);

/** JSON as the board shows it: as it is when its text fits `max` characters, else that text cut (a string). */
export function cutJson(value: Json, max: number): Json {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > max ? cutText(text, max) : value;
}

/**
 * The first `max` characters of `JSON.stringify(value, null, 2)` and that text's whole length, without making the
 * whole text: its indentation grows with the nesting, so a 1 MiB value nested 64 deep is over 50 million characters
 * (a quarter of a second to make, for every key shown), and a larger one more than a string can hold.
 */
export function prettyJson(value: Json, max: number): { text: string; size: number } {
  const parts: string[] = [];
  let kept = 0;
  let size = 0;
  const put = (text: string): void => {
    size += text.length;
    if (kept >= max) return;
    const part = text.length > max - kept ? text.slice(0, max - kept) : text;
    parts.push(part);
    kept += part.length;
  };
  const walk = (v: Json, indent: string): void => {
    if (v === null || typeof v !== 'object') {
      put(JSON.stringify(v) ?? 'null');
      return;
    }
    const list = Array.isArray(v);
    const keys = list ? undefined : Object.keys(v).filter((k) => v[k] !== undefined);
    const count = keys ? keys.length : (v as Json[]).length;
    if (count === 0) {
      put(list ? '[]' : '{}');
      return;
    }
    const inner = `${indent}  `;
    const [first, next] = [`\n${inner}`, `,\n${inner}`];
    put(list ? '[' : '{');
    for (let i = 0; i < count; i++) {
      put(i ? next : first);
      if (keys) {
        put(`${JSON.stringify(keys[i])}: `);
        walk((v as Record<string, Json>)[keys[i]], inner);
      } else walk((v as Json[])[i] ?? null, inner);
    }
    put(`\n${indent}${list ? ']' : '}'}`);
  };
  walk(value, '');
  return { text: parts.join(''), size };
}

/** A stored key as the board shows it: its value as JSON text, cut at {@link MAX_VALUE_CHARS}. */
export function keyView(key: string, entry: Entry): KeyView {
  const { text, size } = prettyJson(entry.value, MAX_VALUE_CHARS);
  return {
    key,
    value: text,
    size,
    cut: size > MAX_VALUE_CHARS,
    version: entry.version,
    updatedBy: entry.updatedBy,
    updatedAt: entry.updatedAt,
    ...(entry.expiresAt !== undefined ? { expiresAt: entry.expiresAt } : {}),
  };
}

/**
 * A namespace's user keys (`entries`, storage keys in key order) grouped by scope, `global` first, then by name. With
 * `recent`, only that many of them, the most recently changed; `total` counts every key. Values are made into views
 * only for the keys kept (a view walks its whole value).
 */
export function scopesOf(namespace: string, entries: Array<[string, Entry]>, recent?: number): { scopes: ScopeView[]; total: number } {
  const byScope = new Map<string, Array<{ key: string; entry: Entry }>>();
  for (const [storageKey, entry] of entries) {
    const parsed = parseKey(namespace, storageKey);
    if (parsed?.kind !== 'data') continue;
    let keys = byScope.get(parsed.scope);
    if (!keys) {
      keys = [];
      byScope.set(parsed.scope, keys);
    }
    keys.push({ key: parsed.key, entry });
  }
  const grouped = [...byScope].sort(([a], [b]) => byScopeThenKey({ scope: a }, { scope: b }));
  const all = grouped.flatMap(([, keys]) => keys);
  const kept = recent === undefined ? undefined : new Set([...all].sort((a, b) => b.entry.updatedAt - a.entry.updatedAt).slice(0, recent));
  const scopes = grouped
    .map(([scope, keys]) => ({ scope, keys: keys.filter((k) => kept?.has(k) ?? true).map((k) => keyView(k.key, k.entry)) }))
    .filter((s) => s.keys.length > 0);
  return { scopes, total: all.length };
}

/** `global` first, then scopes by name; within a scope, keys by name. */
export function byScopeThenKey(a: { scope: string; key?: string }, b: { scope: string; key?: string }): number {
  if (a.scope !== b.scope) return a.scope === 'global' ? -1 : b.scope === 'global' ? 1 : a.scope < b.scope ? -1 : 1;
  return (a.key ?? '') < (b.key ?? '') ? -1 : (a.key ?? '') > (b.key ?? '') ? 1 : 0;
}
