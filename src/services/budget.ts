// Budgets per thread: spending counted against the thread and its ancestors, judged by maxes stored with each thread.
import { BlackboardError, invalid } from '../errors.js';
import { checkName, idempotent, type CallOptions } from '../context.js';
import { lastPart } from '../keyspace.js';
import * as z from 'zod';
import type { Json, KeyRange } from '../store/types.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import type { LifecycleService } from './lifecycle.js';
import { decode, encode } from './records.js';
import type { Session } from './session.js';
import { threadInfoOf } from './thread-info.js';

export interface BudgetView {
  name: string;
  current: number;
  max: number;
  remaining: number;
  reached: boolean;
}

/** A thread's budget: how much is spent, and its max — stored with the thread, fixed by the first server that serves it, changed only by an admin. */
export const BudgetRecord = z.object({ current: z.number(), max: z.number().optional() });
type BudgetRecord = z.infer<typeof BudgetRecord>;
/** The budget in a stored value, or a fresh one (nothing spent, no max) when there is none. */
const budgetOf = (value: Json | undefined): BudgetRecord => (value === undefined ? { current: 0 } : decode(BudgetRecord, value, 'budget'));

const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_AMOUNT = 1e12;
/** A record beside the budgets of a thread saying its maxes are fixed (no budget name can look like this). */
const FIXED = '~fixed';

/**
 * Per-thread budgets. A thread's maxes are stored with it: the first server that serves the thread with budgets
 * configured (`--max-iterations`, `--budget`) writes its maxes there, and from then on every process judges the
 * thread by the stored maxes, whatever its own flags — so a child started with larger flags cannot spend past its
 * parent's limit. Only `budget_configure`/`budget_increase` (operator tools) change a stored max.
 *
 * A step is atomic and all-or-nothing across the whole delegation chain: it is counted against this thread and
 * every ancestor, and refused (consuming nothing anywhere) when any of them would pass its stored max.
 */
export class BudgetService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly lifecycle: LifecycleService,
    /** this server's maxes: `--max-iterations` as "iterations", and every `--budget NAME=MAX` */
    private readonly limits: Record<string, number>,
  ) {}

  key(thread: string, name: string): string {
    return this.session.keys.budget(thread, name);
  }
  /** Every budget record of a thread. */
  range(thread: string): KeyRange {
    return this.session.keys.budgetRange(thread);
  }

  /**
   * Stores this server's maxes with the thread it serves, unless the thread's maxes are already fixed (by this or
   * another server). Call when a connection starts serving a thread.
   */
  async adopt(thread = this.session.identity.thread): Promise<void> {
    if (Object.keys(this.limits).length === 0) return;
    if (await this.store.get(this.key(thread, FIXED))) return;
    await this.store.transact(async (tx) => {
      await this.adoptIn(tx, thread);
      return null;
    });
  }

  private async adoptIn(tx: StoreTx, thread: string): Promise<void> {
    if (Object.keys(this.limits).length === 0 || (await tx.get(this.key(thread, FIXED)))) return;
    for (const [name, max] of Object.entries(this.limits)) {
      const record = budgetOf((await tx.get(this.key(thread, name)))?.value);
      if (record.max === undefined) await tx.set(this.key(thread, name), encode({ current: record.current, max }), { by: this.session.by });
    }
    await tx.set(this.key(thread, FIXED), encode({ maxes: this.limits }), { by: this.session.by });
  }

  async status(): Promise<{ budgets: BudgetView[] }> {
    const thread = this.session.identity.thread;
    const { entries } = await this.store.list({ ...this.range(thread), limit: 1000 });
    // Not fixed yet: this server's maxes are the ones the thread's first step will store.
    const fixed = entries.some(([key]) => lastPart(key) === FIXED);
    const stored = new Map(
      entries.filter(([key]) => lastPart(key) !== FIXED).map(([key, entry]) => [lastPart(key), budgetOf(entry.value)]),
    );
    const names = [...new Set([...(fixed ? [] : Object.keys(this.limits)), ...stored.keys()])].sort();
    const budgets: BudgetView[] = [];
    for (const name of names) {
      const record = stored.get(name);
      const max = record?.max ?? (fixed ? undefined : this.limits[name]);
      if (max === undefined) continue;
      budgets.push(describe(name, record?.current ?? 0, max));
    }
    return { budgets };
  }

  async step(args: { name?: string; amount?: number; idempotencyKey?: string }, call: CallOptions): Promise<BudgetView> {
    const name = args.name ?? 'iterations';
    const amount = args.amount ?? 1;
    checkBudgetName(name);
    if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_AMOUNT) {
      throw invalid(`amount must be a whole number from 1 to ${MAX_AMOUNT}.`, { amount, path: 'amount' });
    }
    await this.session.refresh();
    const who = this.session.identity; // the run this step is charged in, whatever the connection sees meanwhile
    const known = [who.thread, ...(await this.session.ancestors())];
    const { result } = await this.store.transact(
      async (tx) => {
        await this.lifecycle.assertActive(tx, who);
        await this.adoptIn(tx, who.thread);
        // A parent, once set, never changes, but the topmost thread may have been given one since: then the step
        // charges the threads above it too (read here, so a parent given meanwhile is not missed).
        const chain = [...known];
        for (let top = chain.at(-1)!; chain.length < 65; ) {
          const parent = threadInfoOf((await tx.get(this.session.threadKey(top)))?.value)?.parent;
          if (parent === undefined || chain.includes(parent)) break;
          chain.push(parent);
          top = parent;
        }
        const records: Array<{ thread: string; record: BudgetRecord }> = [];
        for (const thread of chain) {
          const record = budgetOf((await tx.get(this.key(thread, name)))?.value);
          records.push({ thread, record });
        }
        if (records[0].record.max === undefined) {
          const known = (await tx.list({ ...this.range(who.thread), limit: 1000 }))
            .filter(([key, entry]) => lastPart(key) !== FIXED && budgetOf(entry.value).max !== undefined)
            .map(([key]) => lastPart(key));
          throw new BlackboardError(
            'NOT_FOUND',
            `There is no budget named "${name}" on this thread. ${known.length > 0 ? `Budgets here: ${known.join(', ')}.` : 'This thread has no budgets, so there is nothing to spend: go on without {tool:budget_step} (a server sets budgets with --max-iterations or --budget NAME=MAX).'}`,
            { name },
          );
        }
        for (const { thread, record } of records) {
          if (record.max !== undefined && record.current + amount > record.max) {
            const left = Math.max(0, record.max - record.current);
            const whose = thread === who.thread ? `The "${name}" budget` : `The "${name}" budget of the parent thread ${thread}`;
            throw new BlackboardError(
              'LIMIT_REACHED',
              `${whose} cannot cover this: asked for ${amount}, ${left} of ${record.max} left; nothing was consumed. ${left > 0 ? `Ask for ${left} or less, or stop` : 'Stop'}, summarise what you have, and finish.`,
              { name, thread, current: record.current, max: record.max, requested: amount, remaining: left },
            );
          }
        }
        for (const { thread, record } of records) {
          await tx.set(this.key(thread, name), encode({ ...record, current: record.current + amount }), { by: this.session.by });
        }
        return describe(name, records[0].record.current + amount, records[0].record.max);
      },
      // a retry that spells out a default (amount 1) is the same call
      { ...idempotent(who, call, { ...args, name, amount }) },
    );
    return result;
  }

  /**
   * The refusal of new work (LIMIT_REACHED) once any budget of a thread of `chain` (this thread, then its ancestors)
   * is used up, or `undefined`. Finishing work already held is not new work: callers use it only to grant a claim.
   */
  async usedUp(chain: string[]): Promise<BlackboardError | undefined> {
    for (const thread of chain) {
      for (const [key, entry] of (await this.store.list({ ...this.range(thread), limit: 1000 })).entries) {
        const name = lastPart(key);
        if (name === FIXED) continue;
        const { current, max } = budgetOf(entry.value);
        if (max === undefined || current < max) continue;
        const whose = thread === chain[0] ? `The "${name}" budget` : `The "${name}" budget of the parent thread ${thread}`;
        return new BlackboardError(
          'LIMIT_REACHED',
          `${whose} is used up (${current} of ${max}, 0 left), so no new step can be taken; nothing was claimed. Finish a step you hold with {tool:plan_step}, then summarise and finish.`,
          { name, thread, current, max, remaining: 0 },
        );
      }
    }
    return undefined;
  }

  /** Admin: set a thread's stored max for a budget (`--allow-budget-admin` only). */
  async configure(args: { name: string; max: number; thread?: string; idempotencyKey?: string }, call: CallOptions): Promise<BudgetView> {
    return this.adjust(call, args, () => checkMax(args.max));
  }

  /** Admin: raise a thread's stored max by `amount` (`--allow-budget-admin` only). */
  async increase(args: { name: string; amount: number; thread?: string; idempotencyKey?: string }, call: CallOptions): Promise<BudgetView> {
    if (!Number.isSafeInteger(args.amount) || args.amount < 1)
      throw invalid('amount must be a whole number, 1 or more.', { path: 'amount' });
    return this.adjust(call, args, (current) => {
      if (current === undefined)
        throw new BlackboardError(
          'NOT_FOUND',
          `There is no budget named "${args.name}" on that thread to increase. Set one with {tool:budget_configure}.`,
          { name: args.name },
        );
      return checkMax(current + args.amount, 'amount');
    });
  }

  private async adjust(
    call: CallOptions,
    args: { name: string; thread?: string; idempotencyKey?: string },
    nextMax: (current: number | undefined) => number,
  ): Promise<BudgetView> {
    const { name } = args;
    checkBudgetName(name);
    const thread = args.thread === undefined ? this.session.identity.thread : checkName('thread', args.thread, 'thread');
    const { result } = await this.store.transact(
      async (tx) => {
        // An admin change fixes the thread's maxes first, so this server's flags cannot overwrite it later.
        if (thread === this.session.identity.thread) await this.adoptIn(tx, thread);
        const record = budgetOf((await tx.get(this.key(thread, name)))?.value);
        const max = nextMax(record.max);
        await tx.set(this.key(thread, name), encode({ ...record, max }), { by: this.session.by });
        return describe(name, record.current, max);
      },
      { ...idempotent(this.session.identity, call, { ...args, thread }) }, // the thread spelled out or not: the same call
    );
    return result;
  }
}

function describe(name: string, current: number, max: number): BudgetView {
  return { name, current, max, remaining: Math.max(0, max - current), reached: current >= max };
}

function checkBudgetName(name: string): void {
  if (!NAME_RE.test(name))
    throw invalid('A budget name is 1-64 letters, digits, "_", "." or "-".', { name: String(name).slice(0, 80), path: 'name' });
}

function checkMax(max: number, path = 'max'): number {
  if (!Number.isSafeInteger(max) || max < 0) throw invalid('max must be a whole number, 0 or more.', { max, path });
  return max;
}
