// The scratchpad service: one run's working memory (variables, observations, failed approaches).
import { invalid } from '../errors.js';
import { checkKey, idempotent, type CallOptions } from '../context.js';
import * as z from 'zod';
import type { Json } from '../store/types.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import type { LifecycleService } from './lifecycle.js';
import { anyJson, decode, encode } from './records.js';
import type { Session } from './session.js';

export interface Scratchpad {
  variables: Record<string, Json>;
  observations: string[];
  failedApproaches: Array<{ approach: string; reason?: string }>;
}

/** The stored scratchpad; `variables` keeps the object as stored (names like `__proto__` included). */
const ScratchpadRecord: z.ZodType<Scratchpad> = z.object({
  variables: anyJson.refine((v) => typeof v === 'object' && v !== null && !Array.isArray(v)) as z.ZodType<Record<string, Json>>,
  observations: z.array(z.string()),
  failedApproaches: z.array(z.object({ approach: z.string(), reason: z.string().optional() })),
});
const padOf = (value: Json | undefined): Scratchpad => (value === undefined ? empty() : decode(ScratchpadRecord, value, 'scratchpad'));

const empty = (): Scratchpad => ({ variables: {}, observations: [], failedApproaches: [] });
const PREVIEW_CHARS = 200;

/**
 * Working memory of one run: named variables, observations, and approaches that failed (so the model does not
 * retry them). One record per run, changed atomically; `read` renders it as compact prompt text.
 */
export class ScratchpadService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly lifecycle: LifecycleService,
  ) {}

  key(thread = this.session.identity.thread, run = this.session.identity.run): string {
    return this.session.keys.scratchpad(thread, run);
  }

  private async change<T extends object>(call: CallOptions, args: { idempotencyKey?: string }, fn: (pad: Scratchpad) => T): Promise<T> {
    await this.session.refresh();
    const { result } = await this.store.transact(
      async (tx: StoreTx) => {
        await this.lifecycle.assertActive(tx);
        const pad = padOf((await tx.get(this.key()))?.value);
        const out = fn(pad);
        await tx.set(this.key(), encode(pad), { by: this.session.by });
        return out;
      },
      { ...idempotent(this.session.identity, call, args) },
    );
    return result;
  }

  async storeVariable(args: { name: string; value: Json; idempotencyKey?: string }, call: CallOptions): Promise<{ name: string; variables: number }> {
    checkKey(args.name, 'name');
    if (args.value === undefined) throw invalid('value is required: any JSON value.');
    return this.change(call, args, (p) => {
      Object.defineProperty(p.variables, args.name, { value: args.value, enumerable: true, writable: true, configurable: true });
      return { name: args.name, variables: Object.keys(p.variables).length };
    });
  }

  async observe(args: { observation: string; idempotencyKey?: string }, call: CallOptions): Promise<{ observations: number }> {
    if (typeof args.observation !== 'string' || args.observation.trim() === '') throw invalid('observation must be non-empty text.');
    return this.change(call, args, (p) => ({ observations: p.observations.push(args.observation) }));
  }

  async fail(args: { approach: string; reason?: string; idempotencyKey?: string }, call: CallOptions): Promise<{ failedApproaches: number }> {
    if (typeof args.approach !== 'string' || args.approach.trim() === '') throw invalid('approach must be non-empty text.');
    return this.change(call, args, (p) => ({
      failedApproaches: p.failedApproaches.push({ approach: args.approach, ...(args.reason ? { reason: args.reason } : {}) }),
    }));
  }

  async read(): Promise<Scratchpad & { context: string }> {
    await this.session.refresh();
    const pad = padOf((await this.store.get(this.key()))?.value);
    return { ...pad, context: render(pad) };
  }

  async clear(args: { idempotencyKey?: string }, call: CallOptions): Promise<{ cleared: boolean }> {
    await this.session.refresh();
    const { result } = await this.store.transact(
      async (tx) => {
        await this.lifecycle.assertActive(tx);
        return { cleared: await tx.delete(this.key()) };
      },
      { ...idempotent(this.session.identity, call, args) },
    );
    return result;
  }
}

/** A compact text rendering for a prompt. */
export function render(pad: Scratchpad): string {
  const lines: string[] = [];
  const names = Object.keys(pad.variables);
  if (names.length > 0) {
    lines.push('Variables:');
    for (const name of names) {
      const text = JSON.stringify(pad.variables[name]);
      lines.push(`- ${name} = ${text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text}`);
    }
  }
  if (pad.observations.length > 0) {
    lines.push('Observations:');
    for (const [i, o] of pad.observations.entries()) lines.push(`${i + 1}. ${o}`);
  }
  if (pad.failedApproaches.length > 0) {
    lines.push('Failed approaches (do not retry):');
    for (const f of pad.failedApproaches) lines.push(`- ${f.approach}${f.reason ? ` — ${f.reason}` : ''}`);
  }
  return lines.length > 0 ? lines.join('\n') : '(scratchpad is empty)';
}
