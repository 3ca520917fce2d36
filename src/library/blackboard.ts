// openBlackboard: the tools' operations for code, each a call into the same services, with the tools' argument rules and errors.
import type {
  Blackboard,
  BlackboardOptions,
  CallOptions,
  Change,
  FollowArgs,
  Identity,
  InboxArgs,
  InboxPage,
  Message,
} from '../api/index.js';
import type { Config } from '../config.js';
import type { CallOptions as ServiceCall } from '../context.js';
import { openConnection } from '../connection.js';
import { BlackboardError, storeUnavailable } from '../errors.js';
import { WATCH_DEFAULT_MS, WATCH_MAX_MS } from '../services/arguments.js';
import { CHANGES_MAX_LIMIT } from '../services/changes.js';
import { loadDocument } from '../services/checkpoint.js';
import type { Json } from '../store/types.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { renderMentions } from '../tool-mentions.js';
import { boundValue } from '../tools/bounds.js';
import { ToolHost } from '../tools/define.js';
import { LIST_DEFAULT as HISTORY_LIST_DEFAULT } from '../tools/history.js';
import { registerTools } from '../tools/index.js';
import { FAMILIES } from '../config.js';
import { checkIdentity, checkOptions, checkPlainArgs, configOf, onlyArgs, storeOf } from './options.js';
import { eitherSignal } from './signals.js';

/** How error messages name a tool to code: the method that does what the tool does. */
const METHODS: Record<string, string> = {
  state_get: 'kv.get()',
  state_set: 'kv.set()',
  state_delete: 'kv.delete()',
  state_list: 'kv.list()',
  state_snapshot: 'kv.snapshot()',
  state_update: 'kv.update()',
  state_batch: 'kv.batch()',
  watch: 'kv.watch()',
  state_changes: 'kv.changes()',
  plan_create: 'plans.create()',
  plan_get: 'plans.get()',
  plan_list: 'plans.list()',
  plan_update: 'plans.update()',
  plan_claim: 'plans.claim()',
  plan_step: 'plans.step()',
  plan_delete: 'plans.delete()',
  scratchpad_write: 'scratchpad.write()',
  scratchpad_read: 'scratchpad.read()',
  final_answer_set: 'finalAnswer.set()',
  final_answer_get: 'finalAnswer.get()',
  budget_status: 'budgets.status()',
  budget_step: 'budgets.step()',
  budget_configure: 'budgets.configure()',
  budget_increase: 'budgets.increase()',
  agent_state_get: 'lifecycle.get()',
  agent_state_set: 'lifecycle.set()',
  whoami: 'whoami()',
  run_start: 'runs.start()',
  run_end: 'runs.end()',
  history_append: 'history.append()',
  history_list: 'history.list()',
  history_prune: 'history.prune()',
  signal: 'signal()',
  checkpoint_save: 'checkpoints.save()',
  checkpoint_list: 'checkpoints.list()',
  checkpoint_restore: 'checkpoints.restore()',
  checkpoint_delete: 'checkpoints.delete()',
  team_list: 'team.list()',
  message_send: 'send()',
  inbox: 'inbox()',
};

const render = (text: string): string => renderMentions(text, (name) => METHODS[name] ?? name);

/** A read's value as `maxBytes` asks (a preview past it, as the tool's), or whole when it is not given. */
const bounded = <R extends { value?: Json }>(result: R, maxBytes: number | undefined): R =>
  maxBytes === undefined || result.value === undefined ? result : { ...result, ...boundValue(result.value, maxBytes) };

/** `checkpoints.get()`'s one argument, which the tool it borrows its checks from leaves optional beside others. */
function onlyCheckpointId(args: { checkpointId?: string }): string {
  onlyArgs('checkpoints.get()', args, ['checkpointId']);
  if (args.checkpointId === undefined) throw new BlackboardError('INVALID_ARGUMENT', 'checkpointId is required.', { path: 'checkpointId' });
  return args.checkpointId;
}

/** A BlackboardError as code sees it: tool mentions named as methods; anything else thrown is STORE_UNAVAILABLE. */
function toLibraryError(error: unknown, tool: string): BlackboardError {
  const failure = error instanceof BlackboardError ? error : storeUnavailable(error, `complete ${METHODS[tool] ?? tool}`);
  failure.message = render(failure.message);
  return failure;
}

/**
 * Opens a blackboard: a connection to the store (a URL opened here, or a handle from `openStore`) with an identity,
 * whose methods are the tools' operations over the same services, so the rules, guarantees and error codes are the
 * tools' own. Any number of blackboards and servers, in one process or many, share a store.
 */
export async function openBlackboard(options: BlackboardOptions = {}): Promise<Blackboard> {
  const checked = checkOptions(options, 'blackboard');
  const { store, owned } = await storeOf(checked);
  try {
    return await blackboardOver(store, configOf(checked), owned);
  } catch (error) {
    if (owned) await store.close().catch(() => {});
    throw error;
  }
}

async function blackboardOver(
  store: VersionedStore,
  config: Config,
  ownsStore: boolean,
  /** for one opened by as(): tells the blackboard it was opened from how to close this one with it */
  adopted?: (closing: AbortController) => void,
): Promise<Blackboard> {
  // Every family's operation is a method, so every family is on (run_end's checkpoint included).
  const { services, beforeWrite, afterCall } = await openConnection({ ...config, tools: [...FAMILIES] }, store);
  // The tools' declarations, for their argument schemas: every family, the operator's budget tools included.
  const host = new ToolHost(undefined, config.progressIntervalMs);
  registerTools(host, services);
  const closing = new AbortController();
  const closed = (): boolean => closing.signal.aborted;
  // The blackboards opened from this one (as()) are closed with it, but held weakly: a handle opened per request and
  // dropped unclosed is collected (one still waiting is held by its wait, and its wait ends at close).
  const opened = new Set<WeakRef<AbortController>>();
  const collected = new FinalizationRegistry<WeakRef<AbortController>>((ref) => opened.delete(ref));
  const adopt = (child: AbortController): void => {
    const ref = new WeakRef(child);
    opened.add(ref);
    collected.register(child, ref);
  };
  closing.signal.addEventListener('abort', () => {
    for (const ref of opened) ref.deref()?.abort(closing.signal.reason);
  });
  adopted?.(closing);

  /** Wires one operation: the tool's argument check, the first-write bookkeeping, the service call, the error rules. */
  const op =
    <A, R>(tool: string, run: (args: A, signal: AbortSignal, call: ServiceCall) => Promise<R>) =>
    async (args?: A, callOptions?: CallOptions): Promise<R> => {
      if (closed()) throw new BlackboardError('STORE_UNAVAILABLE', `This blackboard is closed: ${METHODS[tool]} cannot run.`);
      const joined = callOptions?.signal ? eitherSignal(callOptions.signal, closing.signal) : undefined;
      const signal = joined?.signal ?? closing.signal;
      try {
        const checked = host.parseArguments(tool, args);
        if (checked.writes) await beforeWrite();
        const result = await run(checked.args as A, signal, { operation: tool });
        await afterCall();
        // advice in a result names methods, as errors do
        if (result !== null && typeof result === 'object' && 'hint' in result && typeof result.hint === 'string') {
          return { ...result, hint: render(result.hint) };
        }
        return result;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw toLibraryError(error, tool);
      } finally {
        joined?.release();
      }
    };
  const s = services;

  const blackboard: Blackboard = {
    kv: {
      // a value comes whole unless maxBytes asks for a preview, as the tool's default does
      get: op('state_get', async (a) => bounded(await s.kv.get(a), a.maxBytes)),
      set: op('state_set', (a, _, c) => s.kv.set(a, c)),
      delete: op('state_delete', (a, _, c) => s.kv.delete(a, c)),
      list: op('state_list', (a) => s.kv.list(a)),
      snapshot: op('state_snapshot', (a) => s.kv.snapshot(a)),
      update: op('state_update', (a, _, c) => s.kv.update(a, c)),
      batch: op('state_batch', async (a, _, c) => {
        const result = await s.kv.batch(a, c);
        for (const slot of result.results) if (slot.error) slot.error.message = render(slot.error.message);
        return result;
      }),
      watch: op('watch', async (a, signal) => bounded(await s.kv.watch(a, signal), a.maxBytes)),
      changes: op('state_changes', (a, signal) => s.changes.changes(a, signal)),
    },
    plans: {
      create: op('plan_create', (a, _, c) => s.plans.create(a, c)),
      get: op('plan_get', (a) => s.plans.get(a)),
      list: op('plan_list', (a) => s.plans.list(a)),
      update: op('plan_update', (a, _, c) => s.plans.update(a, c)),
      claim: op('plan_claim', (a, _, c) => s.work.claim(a, c)),
      step: op('plan_step', (a, _, c) => s.work.step(a, c)),
      delete: op('plan_delete', (a, _, c) => s.plans.delete(a, c)),
    },
    scratchpad: {
      write: op('scratchpad_write', (a, _, c) => s.scratchpad.write(a, c)),
      read: op('scratchpad_read', () => s.scratchpad.read(Number.POSITIVE_INFINITY)),
    },
    finalAnswer: {
      set: op('final_answer_set', (a, _, c) => s.finalizer.set(a, c)),
      get: op('final_answer_get', (a, signal) => s.finalizer.get(a, signal)),
    },
    budgets: {
      status: op('budget_status', () => s.budget.status()),
      step: op('budget_step', (a, _, c) => s.budget.step(a, c)),
      configure: op('budget_configure', (a, _, c) => s.budget.configure(a, c)),
      increase: op('budget_increase', (a, _, c) => s.budget.increase(a, c)),
    },
    lifecycle: {
      get: op('agent_state_get', (a) => s.lifecycle.get(a)),
      set: op('agent_state_set', (a, _, c) => s.lifecycle.set(a, c)),
    },
    runs: {
      start: op('run_start', (a, _, c) => s.runs.start(a, c)),
      end: op('run_end', (a, _, c) => s.runs.end(a, c)),
    },
    history: {
      append: op('history_append', (a, _, c) => s.history.append(a, c)),
      list: op(
        'history_list',
        (a: { thread?: string; afterSeq?: number; limit?: number; kind?: string; order?: 'asc' | 'desc'; cursor?: string }) =>
          s.history.list({ ...a, limit: a.limit ?? HISTORY_LIST_DEFAULT }),
      ),
      prune: op('history_prune', (a, _, c) => s.history.prune(a, c)),
    },
    checkpoints: {
      save: op('checkpoint_save', (a, _, c) => s.checkpoints.save(a, c)),
      list: op('checkpoint_list', (a) => s.checkpoints.list(a)),
      // checked as checkpoint_list's arguments, of which it takes checkpointId alone
      get: op('checkpoint_list', (a: { checkpointId?: string }) => s.checkpoints.get({ checkpointId: onlyCheckpointId(a) })),
      restore: op('checkpoint_restore', (a, _, c) => s.checkpoints.restore(a, c)),
      delete: op('checkpoint_delete', (a, _, c) => s.checkpoints.delete(a, c)),
    },
    bundles: {
      export: async (args) => {
        if (closed()) throw new BlackboardError('STORE_UNAVAILABLE', 'This blackboard is closed: bundles.export() cannot run.');
        const { thread } = checkPlainArgs('bundles.export()', args, { thread: 'string' }) as { thread?: string | null };
        try {
          return typeof thread === 'string' ? await s.bundles.exportThread(thread) : (await s.bundles.exportNamespace()).doc;
        } catch (error) {
          throw toLibraryError(error, 'export');
        }
      },
      import: async (bundle, options) => {
        if (closed()) throw new BlackboardError('STORE_UNAVAILABLE', 'This blackboard is closed: bundles.import() cannot run.');
        const { replace } = checkPlainArgs('bundles.import()', options, { replace: 'boolean' });
        try {
          // The whole bundle is checked before anything is written: a corrupt one changes nothing.
          const doc = loadDocument(typeof bundle === 'string' ? bundle : JSON.stringify(bundle), 'bundle');
          await beforeWrite();
          return await s.bundles.import(doc, { replace: replace === true });
        } catch (error) {
          throw toLibraryError(error, 'import');
        }
      },
    },
    whoami: op('whoami', async () => {
      const [me, { state }, { budgets }, unread] = await Promise.all([
        s.runs.whoami(),
        s.lifecycle.get(),
        s.budget.status(),
        s.messages.unread(),
      ]);
      return { ...me, state, budgets, unread };
    }),
    team: { list: op('team_list', (a) => s.team.list(a)) },
    send: op('message_send', (a, _, c) => s.messages.send(a, c)),
    mail: { read: op('inbox', (a, signal) => s.messages.inbox(a, signal)) },
    inbox: (args?: InboxArgs, callOptions?: CallOptions) => readInbox(args ?? {}, callOptions ?? {}),
    signal: op('signal', (a, _, c) => s.signals.signal(a, c)),
    changes: (args?: FollowArgs, callOptions?: CallOptions) => follow(args ?? {}, callOptions ?? {}),
    as: async (identity: Identity) => {
      if (closed()) throw new BlackboardError('STORE_UNAVAILABLE', 'This blackboard is closed: as() cannot open another identity on it.');
      const { namespace, agent, agentType, thread, parentThread } = checkIdentity(identity);
      return blackboardOver(
        store,
        { ...config, namespace: namespace ?? config.namespace, agent, agentType, thread, parentThread },
        false,
        adopt,
      );
    },
    close: async () => {
      if (closed()) return;
      closing.abort(new DOMException('The blackboard was closed.', 'AbortError'));
      if (ownsStore) await store.close();
    },
  };

  const page = blackboard.kv.changes;
  /**
   * The change feed as an async iterator. Without `afterRevision`, "from now on" is from this call: the revision to
   * follow from is read at once, not when the loop first asks (a write made in between would be missed).
   */
  function follow(args: FollowArgs, callOptions: CallOptions): AsyncIterable<Change> {
    onlyArgs('changes()', args, ['afterRevision', 'scope', 'prefix']); // it sets limit and waitMs itself
    const { afterRevision, ...filter } = args;
    const start = afterRevision !== undefined ? Promise.resolve(afterRevision) : page({ ...filter }, callOptions).then((r) => r.revision);
    start.catch(() => {}); // a failure shows in the loop
    return pages(start, filter, callOptions);
  }

  /** Pages of `state_changes` after `start`, each waiting for the next change. */
  async function* pages(start: Promise<number>, filter: Omit<FollowArgs, 'afterRevision'>, callOptions: CallOptions) {
    let after = await start;
    while (!closed()) {
      let result: Awaited<ReturnType<typeof page>>;
      try {
        result = await page({ ...filter, afterRevision: after, limit: CHANGES_MAX_LIMIT, waitMs: WATCH_MAX_MS }, callOptions);
      } catch (error) {
        if (closed() && !callOptions.signal?.aborted) return; // close() ends the loop quietly
        throw error;
      }
      for (const change of result.changes) yield change;
      after = result.revision;
    }
  }

  /** The inbox as an iterator: each message is acknowledged when the loop asks for the next one. */
  async function* readInbox(args: InboxArgs, callOptions: CallOptions): AsyncGenerator<Message, void, undefined> {
    if (closed()) throw new BlackboardError('STORE_UNAVAILABLE', 'This blackboard is closed: inbox() cannot run.');
    let ack: string | undefined;
    let sent: string | undefined;
    try {
      while (!closed()) {
        callOptions.signal?.throwIfAborted();
        let page: InboxPage;
        try {
          // each read waits for mail (25 s unless asked otherwise): a read that answered at once would spin
          page = await blackboard.mail.read({ waitMs: WATCH_DEFAULT_MS, ...args, ...(ack !== undefined ? { ack } : {}) }, callOptions);
          sent = ack;
        } catch (error) {
          if (closed() && !callOptions.signal?.aborted) return;
          throw error;
        }
        for (const message of page.messages) {
          yield message;
          ack = message.id.slice(1);
        }
        ack = page.cursor; // every message of the page was handled (and any expired between them)
        // an empty page (a wait of 0 asked for) lets the event loop turn before the next read
        if (page.messages.length === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      // the loop stopped (break, return): what it finished before the message it stopped on is acknowledged
      if (ack !== undefined && ack !== sent && !closed()) await blackboard.mail.read({ waitMs: 0, limit: 1, ack }).catch(() => {});
    }
  }

  return blackboard;
}
