// The library's options: checked like the command's flags, turned into the server config; store URLs and shared store handles.
import * as z from 'zod';
import type { BlackboardServerOptions, BlackboardStore, Identity, StoreOptions } from '../api/index.js';
import { defaultConfig, MIN_VALUE_BYTES, type Config } from '../config.js';
import { NAMESPACE_RE } from '../context.js';
import { BlackboardError } from '../errors.js';
import { openStore as openVersionedStore } from '../store/open.js';
import { describeStoreUrl, withoutPassword } from '../store/url.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { argumentError } from '../tools/argument-errors.js';
import { parseToolList } from '../tool-profiles.js';

/** The stores behind the handles `openStore` gave out (a handle shows nothing of the store's internals). */
const handles = new WeakMap<object, VersionedStore>();

const whole = (min: number, max: number) => z.number().int().min(min).max(max).optional();

/** The same bounds as the command's flags (`--max-value-bytes`, `--plan-ttl`, …). */
const storeOptions = {
  maxValueBytes: whole(MIN_VALUE_BYTES, 64 * 1024 * 1024),
  sync: z.enum(['FULL', 'NORMAL']).optional(),
  changeRetentionSeconds: whole(1, 365 * 24 * 3600),
};
const StoreOptionsSchema = z.object(storeOptions).strict();

const OptionsSchema = z
  .object({
    ...storeOptions,
    store: z
      .union([
        z.string(),
        z.custom<BlackboardStore>((value) => typeof value === 'object' && value !== null && handles.has(value), 'a store from openStore()'),
      ])
      .optional(),
    namespace: z.string().regex(NAMESPACE_RE, 'must match ^[a-z][a-z0-9_]{0,31}$').optional(),
    agent: z.string().optional(),
    agentType: z.string().optional(),
    thread: z.string().optional(),
    parentThread: z.string().optional(),
    maxIterations: whole(0, Number.MAX_SAFE_INTEGER),
    budgets: z
      .record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'budget names are 1-64 letters, digits, "_", "." or "-"'), z.number().int().min(0))
      .optional(),
    planTtlSeconds: whole(1, 10 * 365 * 24 * 3600),
    keepCheckpoints: whole(1, 10_000),
    claimLeaseSeconds: whole(1, 7 * 24 * 3600),
    rosterWindowSeconds: whole(1, 30 * 24 * 3600),
    messageRetentionSeconds: whole(1, 365 * 24 * 3600),
    tools: z
      .array(z.string())
      .optional()
      .superRefine((items, ctx) => {
        try {
          if (items) parseToolList(items.join(','));
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
        }
      }),
    allowBudgetAdmin: z.boolean().optional(),
    readOnly: z.boolean().optional(),
    progressIntervalMs: whole(50, 15_000),
  })
  .strict();

/** What `openBlackboard` takes: no server-only options (its every method is there, and it has no tool list). */
const BlackboardOptionsSchema = OptionsSchema.omit({
  tools: true,
  allowBudgetAdmin: true,
  readOnly: true,
  progressIntervalMs: true,
}).strict();

/**
 * Options as checked, for a server (`createBlackboardServer`) or a blackboard (`openBlackboard`, which refuses the
 * server's own options rather than ignore them); INVALID_ARGUMENT naming the option otherwise (`details.path`). A
 * thread that is its own parent is refused too.
 */
export function checkOptions(options: unknown, kind: 'server' | 'blackboard'): BlackboardServerOptions {
  const schema = kind === 'server' ? OptionsSchema : BlackboardOptionsSchema;
  const parsed = schema.safeParse(options ?? {});
  if (!parsed.success) throw argumentError(parsed.error, schema, options);
  checkNotOwnParent(parsed.data);
  return (options ?? {}) as BlackboardServerOptions;
}

const IdentitySchema = OptionsSchema.pick({ namespace: true, agent: true, agentType: true, thread: true, parentThread: true }).strict();

/** An identity as checked (`Blackboard.as`): only identity fields. */
export function checkIdentity(identity: unknown): Identity {
  const parsed = IdentitySchema.safeParse(identity ?? {});
  if (!parsed.success) throw argumentError(parsed.error, IdentitySchema, identity);
  checkNotOwnParent(parsed.data);
  return (identity ?? {}) as Identity;
}

/**
 * The options of a method that has no tool behind it (`bundles.export`, `bundles.import`): an object of the named
 * properties of the given types (null or left out: not given), else INVALID_ARGUMENT naming the property.
 */
export function checkPlainArgs(method: string, args: unknown, types: Record<string, 'string' | 'boolean'>): Record<string, unknown> {
  const given = args ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) {
    const kind = Array.isArray(given) ? 'an array' : `a ${typeof given}`;
    throw new BlackboardError('INVALID_ARGUMENT', `${method} takes an object of options, not ${kind}.`, { path: '' });
  }
  onlyArgs(method, given, Object.keys(types));
  for (const [name, value] of Object.entries(given)) {
    const type = types[name];
    if (value !== undefined && value !== null && typeof value !== type)
      throw new BlackboardError('INVALID_ARGUMENT', `${name} must be a ${type}.`, { path: name });
  }
  return given as Record<string, unknown>;
}

/** INVALID_ARGUMENT naming the first argument of `args` that is not one of `names` (what `method` takes). */
export function onlyArgs(method: string, args: object, names: string[]): void {
  const other = Object.keys(args).find((name) => !names.includes(name));
  if (other !== undefined)
    throw new BlackboardError('INVALID_ARGUMENT', `${method} takes only ${names.join(', ')}, not ${JSON.stringify(other)}.`, {
      path: other,
    });
}

function checkNotOwnParent({ thread, parentThread }: { thread?: string; parentThread?: string }): void {
  if (thread !== undefined && thread === parentThread) {
    throw new BlackboardError('INVALID_ARGUMENT', `Thread ${thread} cannot be its own parent: give another parentThread, or none.`, {
      path: 'parentThread',
    });
  }
}

/** The server config the options stand for: the command's defaults, with what the options give. */
export function configOf(options: BlackboardServerOptions): Config {
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as BlackboardServerOptions;
  return defaultConfig({
    namespace: given.namespace,
    agent: given.agent,
    agentType: given.agentType,
    thread: given.thread,
    parentThread: given.parentThread,
    maxIterations: given.maxIterations,
    ...(given.budgets ? { budgets: { ...given.budgets } } : {}),
    ...(given.tools ? { tools: [...given.tools] } : {}),
    ...pick(given, [
      'maxValueBytes',
      'planTtlSeconds',
      'keepCheckpoints',
      'claimLeaseSeconds',
      'rosterWindowSeconds',
      'messageRetentionSeconds',
      'changeRetentionSeconds',
      'allowBudgetAdmin',
      'progressIntervalMs',
    ]),
    ...(given.sync ? { sync: given.sync } : {}),
    store: typeof given.store === 'string' ? given.store : undefined,
  });
}

function pick<T extends object, K extends keyof T>(from: T, keys: K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]])) as Partial<Pick<T, K>>;
}

/** Opens a store as the command does; an unreachable or unknown store is STORE_UNAVAILABLE, with the password masked. */
export async function openStoreUrl(url: string | undefined, options: StoreOptions): Promise<VersionedStore> {
  try {
    return await openVersionedStore(url, {
      ...(options.maxValueBytes !== undefined ? { maxValueBytes: options.maxValueBytes } : {}),
      synchronous: options.sync ?? 'FULL',
      ...(options.changeRetentionSeconds !== undefined ? { changeRetentionMs: options.changeRetentionSeconds * 1000 } : {}),
    });
  } catch (error) {
    const reason = withoutPassword(error instanceof Error ? error.message : String(error), url);
    throw new BlackboardError('STORE_UNAVAILABLE', `Cannot open the store ${describeStoreUrl(url)}: ${reason}`);
  }
}

/** `openStore`: a handle to share one store connection between blackboards and servers of this process. */
export async function openStore(url?: string, options: StoreOptions = {}): Promise<BlackboardStore> {
  if (url !== undefined && typeof url !== 'string')
    throw new BlackboardError('INVALID_ARGUMENT', 'url must be a store URL string.', { path: 'url' });
  const parsed = StoreOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw argumentError(parsed.error, StoreOptionsSchema, options);
  const store = await openStoreUrl(url, options ?? {});
  const handle: BlackboardStore = Object.freeze({ description: store.backend.description, close: () => store.close() });
  handles.set(handle, store);
  return handle;
}

/** The store the options name: a shared handle (left open), or a URL opened here (closed with its owner). */
export async function storeOf(options: BlackboardServerOptions): Promise<{ store: VersionedStore; owned: boolean }> {
  if (typeof options.store === 'object') return { store: handles.get(options.store)!, owned: false };
  return { store: await openStoreUrl(options.store, options), owned: true };
}
