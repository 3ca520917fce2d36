// The scratchpad service: one run's working memory (variables, observations, failed approaches).
import { BlackboardError, invalid, writing } from '../errors.js';
import { checkKey, idempotent, type CallOptions } from '../context.js';
import * as z from 'zod';
import { jsonBytes } from '../store/json-text.js';
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

export const SCRATCHPAD_KINDS = ['variable', 'observation', 'failed_approach'] as const;
export type ScratchpadKind = (typeof SCRATCHPAD_KINDS)[number];
export type ScratchpadCounts = {
  variables: number;
  observations: number;
  failedApproaches: number;
};
const counts = (p: Scratchpad): ScratchpadCounts => ({
  variables: Object.keys(p.variables).length,
  observations: p.observations.length,
  failedApproaches: p.failedApproaches.length,
});

const empty = (): Scratchpad => ({ variables: {}, observations: [], failedApproaches: [] });
const PREVIEW_CHARS = 200;

/**
 * The store's VALUE_TOO_LARGE for the scratchpad's one record, said of the scratchpad: what is too large is the whole
 * run's notes with this entry, not the value the caller passed, and it has no keys to split over.
 */
function full(error: unknown): unknown {
  if (!(error instanceof BlackboardError) || error.code !== 'VALUE_TOO_LARGE') return error;
  const { bytes, maxValueBytes } = error.details as { bytes: number; maxValueBytes: number };
  return new BlackboardError(
    'VALUE_TOO_LARGE',
    `This run's scratchpad would hold ${bytes} bytes with this entry, over its limit of ${maxValueBytes}. Nothing was written: write a shorter entry, or give a variable a shorter value (long text can go in a key, with {tool:state_set} in scope run).`,
    error.details,
  );
}

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

  private async change<T extends object>(
    call: CallOptions,
    args: { idempotencyKey?: string },
    fn: (pad: Scratchpad, tx: StoreTx) => T,
  ): Promise<T> {
    await this.session.refresh();
    const who = this.session.identity; // the run this write goes to, whatever the connection sees meanwhile
    const key = this.key(who.thread, who.run);
    const { result } = await this.store.transact(
      async (tx: StoreTx) => {
        await this.lifecycle.assertActive(tx, who);
        const pad = padOf((await tx.get(key))?.value);
        const out = await writing('value', async () => fn(pad, tx));
        await writing('value', () => tx.set(key, encode(pad), { by: this.session.by })).catch((error: unknown) => {
          throw full(error);
        });
        return out;
      },
      { ...idempotent(who, call, args) },
    );
    return result;
  }

  /**
   * Adds one entry: a named variable (set or replaced), an observation, or a failed approach (not to retry this
   * run). Returns what is in the scratchpad now, by count.
   */
  async write(
    args: { kind: ScratchpadKind; name?: string; value: Json; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<ScratchpadCounts & { kind: ScratchpadKind; name?: string }> {
    if (!(SCRATCHPAD_KINDS as readonly string[]).includes(args.kind))
      throw invalid(`kind must be one of: ${SCRATCHPAD_KINDS.join(', ')}.`, { path: 'kind' });
    if (args.value === undefined) throw invalid('value is required.', { path: 'value' });
    if (args.kind === 'variable') {
      if (args.name === undefined)
        throw invalid('A variable needs a name: {tool:scratchpad_write}(kind: "variable", name, value).', { path: 'name' });
      checkKey(args.name, 'name');
    } else {
      if (args.name !== undefined)
        throw invalid(`name is only for kind "variable"; an ${args.kind === 'observation' ? 'observation' : 'approach'} is its value.`, {
          path: 'name',
        });
      if (typeof args.value !== 'string' || args.value.trim() === '')
        throw invalid(`value must be non-empty text for kind "${args.kind}".`, { path: 'value' });
    }
    const text = args.value as string;
    return this.change(call, args, (p, tx) => {
      if (args.kind === 'variable') {
        // a value the pad could not keep (a function, from code) is refused, not dropped from the pad unseen
        tx.checkValue(args.value);
        Object.defineProperty(p.variables, args.name!, { value: args.value, enumerable: true, writable: true, configurable: true });
      } else if (args.kind === 'observation') p.observations.push(text);
      else p.failedApproaches.push({ approach: text });
      return { kind: args.kind, ...(args.name !== undefined ? { name: args.name } : {}), ...counts(p) };
    });
  }

  /**
   * This run's notes and their prompt text, in at most `maxBytes` of JSON: when they do not fit, the oldest
   * observations go first, then the oldest variables, then the oldest failed approaches (the notes that keep a model
   * from repeating a mistake), and `omitted` counts what was left out.
   */
  async read(maxBytes: number): Promise<ScratchpadRead> {
    await this.session.refresh();
    return fitPad(padOf((await this.store.get(this.key()))?.value), maxBytes);
  }

  async clear(args: { idempotencyKey?: string }, call: CallOptions): Promise<{ cleared: boolean }> {
    await this.session.refresh();
    const who = this.session.identity;
    const { result } = await this.store.transact(
      async (tx) => {
        await this.lifecycle.assertActive(tx, who);
        return { cleared: await tx.delete(this.key(who.thread, who.run)) };
      },
      { ...idempotent(who, call, args) },
    );
    return result;
  }
}

export interface ScratchpadRead extends Scratchpad {
  context: string;
  truncated?: true;
  omitted?: ScratchpadCounts;
}

const sizeOf = (read: ScratchpadRead | string): number => jsonBytes(read);

/** The pad as read, cut to `maxBytes` (see {@link ScratchpadService.read}). */
function fitPad(pad: Scratchpad, maxBytes: number): ScratchpadRead {
  const whole = { ...pad, context: render(pad) };
  if (sizeOf(whole) <= maxBytes) return whole;
  const kept: Scratchpad = {
    variables: { ...pad.variables },
    observations: [...pad.observations],
    failedApproaches: [...pad.failedApproaches],
  };
  const omitted: ScratchpadCounts = { variables: 0, observations: 0, failedApproaches: 0 };
  const names = Object.keys(kept.variables);
  const dropOne = (): boolean => {
    if (kept.observations.length > 0) {
      kept.observations.shift();
      omitted.observations++;
    } else if (omitted.variables < names.length) {
      delete kept.variables[names[omitted.variables++]];
    } else if (kept.failedApproaches.length > 0) {
      kept.failedApproaches.shift();
      omitted.failedApproaches++;
    } else {
      return false;
    }
    return true;
  };
  const fitted = (): ScratchpadRead => {
    const left = omitted.variables + omitted.observations + omitted.failedApproaches;
    const shown = kept.observations.length + Object.keys(kept.variables).length + kept.failedApproaches.length;
    const context = `${shown > 0 ? `${render(kept)}\n(${left} older` : `(all ${left}`} notes left out to fit ${maxBytes} bytes; read with a larger maxBytes to see them)`;
    return { ...kept, context, truncated: true, omitted: { ...omitted } };
  };
  // Drop by estimate first (an entry shows twice: in its list and in the context), then one at a time until it fits.
  let excess = sizeOf(whole) - maxBytes + 256;
  while (excess > 0) {
    const next = kept.observations[0] ?? kept.variables[names[omitted.variables]] ?? kept.failedApproaches[0];
    if (next === undefined || !dropOne()) break;
    excess -= 2 * sizeOf(next) + 8;
  }
  let read = fitted();
  while (sizeOf(read) > maxBytes && dropOne()) read = fitted();
  return read;
}

/** The first `n` characters (code points, never half of one) of `text`, or `undefined` when it has no more. */
function headOf(text: string, n: number): string | undefined {
  let at = 0;
  for (let i = 0; i < n && at < text.length; i++) at += text.codePointAt(at)! > 0xffff ? 2 : 1;
  return at < text.length ? text.slice(0, at) : undefined;
}

/** A compact text rendering for a prompt. */
export function render(pad: Scratchpad): string {
  const lines: string[] = [];
  const names = Object.keys(pad.variables);
  if (names.length > 0) {
    lines.push('Variables:');
    for (const name of names) {
      const text = JSON.stringify(pad.variables[name]);
      const cut = headOf(text, PREVIEW_CHARS);
      lines.push(`- ${name} = ${cut !== undefined ? `${cut}…` : text}`);
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
