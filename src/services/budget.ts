import { BlackboardError, invalid } from '../errors.js';
import { checkName, idempotencyStorageKey } from '../context.js';
import { lastPart } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { VersionedStore } from '../store/versioned-store.js';
import type { LifecycleService } from './lifecycle.js';
import type { Session } from './session.js';

export interface BudgetView {
  name: string;
  current: number;
  max: number;
  remaining: number;
  reached: boolean;
}

interface BudgetRecord {
  current: number;
  /** a per-thread max set by budget_configure/budget_increase; else the server's configured max */
  max?: number;
}

const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_AMOUNT = 1e12;

/**
 * Per-thread budgets. A step is atomic and all-or-nothing across the whole delegation chain: it is counted
 * against this thread and every ancestor, and refused (consuming nothing anywhere) when any of them would pass its max.
 */
export class BudgetService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly lifecycle: LifecycleService,
    /** configured maxes: `--max-iterations` as "iterations", and every `--budget NAME=MAX` */
    private readonly limits: Record<string, number>,
  ) {}

  key(thread: string, name: string): string {
    return this.session.keys.budget(thread, name);
  }
  /** Every budget record of a thread. */
  range(thread: string): { lo: string; hi: string } {
    return this.session.keys.budgetRange(thread);
  }

  async status(): Promise<{ budgets: BudgetView[] }> {
    const thread = this.session.identity.thread;
    const { entries } = await this.store.list({ ...this.range(thread), limit: 1000 });
    const stored = new Map(entries.map(([key, entry]) => [lastPart(key), entry.value as unknown as BudgetRecord]));
    const names = [...new Set([...Object.keys(this.limits), ...stored.keys()])].sort();
    const budgets: BudgetView[] = [];
    for (const name of names) {
      const record = stored.get(name);
      const max = record?.max ?? this.limits[name];
      if (max === undefined) continue;
      budgets.push(describe(name, record?.current ?? 0, max));
    }
    return { budgets };
  }

  async step(args: { name?: string; amount?: number; idempotencyKey?: string }): Promise<BudgetView> {
    const name = args.name ?? 'iterations';
    const amount = args.amount ?? 1;
    checkBudgetName(name);
    if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_AMOUNT) {
      throw invalid(`amount must be a whole number from 1 to ${MAX_AMOUNT}.`, { amount });
    }
    const who = this.session.identity;
    await this.session.refresh();
    const chain = [who.thread, ...(await this.session.ancestors())];
    const { result } = await this.store.transact(async (tx) => {
      await this.lifecycle.assertActive(tx);
      const records: Array<{ thread: string; record: BudgetRecord; max: number | undefined }> = [];
      for (const thread of chain) {
        const record = ((await tx.get(this.key(thread, name)))?.value as unknown as BudgetRecord | undefined) ?? { current: 0 };
        records.push({ thread, record, max: record.max ?? this.limits[name] });
      }
      if (records[0].max === undefined) {
        const known = Object.keys(this.limits);
        throw new BlackboardError(
          'NOT_FOUND',
          `There is no budget named "${name}". ${known.length > 0 ? `Budgets here: ${known.join(', ')}.` : 'This server has no budgets configured (--max-iterations, --budget NAME=MAX).'}`,
          { name },
        );
      }
      for (const { thread, record, max } of records) {
        if (max !== undefined && record.current + amount > max) {
          throw new BlackboardError(
            'LIMIT_REACHED',
            thread === who.thread
              ? `The "${name}" budget is used up (${record.current} of ${max}); nothing was consumed. Stop, summarise what you have, and finish.`
              : `The "${name}" budget of the parent thread ${thread} is used up (${record.current} of ${max}); nothing was consumed. Stop, summarise what you have, and finish.`,
            { name, thread, current: record.current, max, requested: amount },
          );
        }
      }
      for (const { thread, record } of records) {
        await tx.set(this.key(thread, name), { ...record, current: record.current + amount } as unknown as Json, { by: this.session.by });
      }
      return describe(name, records[0].record.current + amount, records[0].max!);
    }, { idempotencyKey: idempotencyStorageKey(who, 'budget_step', args.idempotencyKey) });
    return result;
  }

  /** Admin: set a thread's max for a budget (`--allow-budget-admin` only). */
  async configure(args: { name: string; max: number; thread?: string; idempotencyKey?: string }): Promise<BudgetView> {
    return this.adjust('budget_configure', args, () => checkMax(args.max));
  }

  /** Admin: raise a thread's max by `amount` (`--allow-budget-admin` only). */
  async increase(args: { name: string; amount: number; thread?: string; idempotencyKey?: string }): Promise<BudgetView> {
    if (!Number.isSafeInteger(args.amount) || args.amount < 1) throw invalid('amount must be a whole number, 1 or more.');
    return this.adjust('budget_increase', args, (current) => {
      if (current === undefined) throw new BlackboardError('NOT_FOUND', `There is no budget named "${args.name}" to increase; use budget_configure.`);
      return checkMax(current + args.amount);
    });
  }

  private async adjust(
    tool: string,
    args: { name: string; thread?: string; idempotencyKey?: string },
    nextMax: (current: number | undefined) => number,
  ): Promise<BudgetView> {
    const { name } = args;
    checkBudgetName(name);
    const thread = args.thread === undefined ? this.session.identity.thread : checkName('thread', args.thread);
    const { result } = await this.store.transact(async (tx) => {
      const record = ((await tx.get(this.key(thread, name)))?.value as unknown as BudgetRecord | undefined) ?? { current: 0 };
      const max = nextMax(record.max ?? this.limits[name]);
      await tx.set(this.key(thread, name), { ...record, max } as unknown as Json, { by: this.session.by });
      return describe(name, record.current, max);
    }, { idempotencyKey: idempotencyStorageKey(this.session.identity, tool, args.idempotencyKey) });
    return result;
  }
}

function describe(name: string, current: number, max: number): BudgetView {
  return { name, current, max, remaining: Math.max(0, max - current), reached: current >= max };
}

function checkBudgetName(name: string): void {
  if (!NAME_RE.test(name)) throw invalid('A budget name is 1-64 letters, digits, "_", "." or "-".', { name: String(name).slice(0, 80) });
}

function checkMax(max: number): number {
  if (!Number.isSafeInteger(max) || max < 0) throw invalid('max must be a whole number, 0 or more.', { max });
  return max;
}
