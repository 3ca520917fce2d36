// One connection's session: its identity, its thread's place in the delegation tree, the thread's current run.
import { randomUUID } from 'node:crypto';
import { checkName, type Identity } from '../context.js';
import { keysOf, type Keys } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import { encode } from './records.js';
import { barringOwner, forbiddenThread } from './ownership.js';
import { sameThreadInfo, threadInfoOf, type ThreadInfo } from './thread-info.js';

export interface SessionOptions {
  namespace?: string;
  agent?: string;
  agentType?: string;
  thread?: string;
  parentThread?: string;
  /**
   * Do not record a thread that does not exist yet until the first write ({@link Session.record}): a connection
   * that only reads leaves nothing behind (HTTP sessions, which clients open freely).
   */
  recordOnWrite?: boolean;
  /** the agent type is the caller's for good (an auth file's client sets it): no call may name another */
  agentTypeFixed?: boolean;
}

export const newId = (): string => randomUUID();

/**
 * The identity of one connection. A thread's current run is thread state: every connection (in any process) that
 * serves the thread joins it, and `run_start` from any of them moves them all to a new one — `refresh()` picks
 * that up before a run-scoped operation.
 */
export class Session {
  /** the storage keys of this connection's namespace */
  readonly keys: Keys;
  /** a new thread this connection serves but has not recorded yet (see {@link SessionOptions.recordOnWrite}) */
  private unrecorded?: { thread: string; parentThread?: string; planned: ThreadInfo; recording?: Promise<void> };
  /** the thread this connection was opened on when another agent owns it: served, but only for reading */
  private visiting?: { thread: string; owner: string };
  /** whether the agent type was fixed for this connection (see {@link SessionOptions.agentTypeFixed}) */
  agentTypeFixed = false;

  constructor(
    readonly store: VersionedStore,
    public identity: Identity,
  ) {
    this.keys = keysOf(identity.namespace);
  }

  static async open(store: VersionedStore, options: SessionOptions): Promise<Session> {
    const session = new Session(store, {
      namespace: options.namespace,
      agent: options.agent === undefined ? undefined : checkName('agent', options.agent),
      agentType: options.agentType === undefined ? undefined : checkName('agent type', options.agentType),
      thread: options.thread === undefined ? newId() : checkName('thread', options.thread),
      run: '',
      rootThread: '',
      delegateLevel: 0,
    });
    session.agentTypeFixed = options.agentTypeFixed === true;
    const { thread } = session.identity;
    const read = readOnce(store);
    // A thread is a handle, not a credential: naming another agent's thread serves it for reading only, as it is
    // (its place in the tree included: a parent given here could otherwise make the caller an owner above it).
    const owner = await barringOwner(session, read, thread);
    if (owner !== undefined) {
      const info = threadInfoOf((await read(session.threadKey(thread)))?.value) ?? { root: thread, level: 0, runs: 0 };
      session.adopt(thread, { ...info, run: info.run ?? '' });
      session.visiting = { thread, owner };
      return session;
    }
    if (options.recordOnWrite) {
      const { before, next } = await session.planThread(read, thread, options.parentThread, false);
      if (before.runs === 0) {
        session.adopt(thread, next);
        session.unrecorded = { thread, parentThread: options.parentThread, planned: next };
        return session;
      }
      // a thread whose record says already what entering it would write (its run, its place in the tree): nothing to
      // write. A client without a session opens a connection per request, and its reads must not write.
      if (sameThreadInfo(before, next)) {
        session.adopt(thread, next);
        return session;
      }
    }
    await session.enterThread(thread, options.parentThread, false);
    return session;
  }

  /** Whether this connection serves a thread another agent owns (it may only read there). */
  get isVisiting(): boolean {
    return this.visiting?.thread === this.identity.thread;
  }

  /**
   * Call before any write: refuses (FORBIDDEN, naming the owner) when this connection serves another agent's thread;
   * records the thread this connection serves if it has not yet.
   */
  async record(): Promise<void> {
    if (this.visiting !== undefined && this.isVisiting) throw forbiddenThread(this.visiting.thread, this.visiting.owner);
    const pending = this.unrecorded;
    if (!pending) return;
    pending.recording ??= (async () => {
      const { result } = await this.store.transact(async (tx): Promise<{ owner?: string; info: ThreadInfo }> => {
        const key = this.threadKey(pending.thread);
        const known = await tx.get(key);
        if (known !== undefined) {
          // another connection recorded the thread meanwhile: join its run, unless another agent now owns it
          const owner = await barringOwner(this, (k) => tx.get(k), pending.thread);
          if (owner !== undefined) return { owner, info: threadInfoOf(known.value) ?? { root: pending.thread, level: 0, runs: 0 } };
          return { info: (await this.enterThreadIn(tx, pending.thread, pending.parentThread, false)).next };
        }
        await tx.set(key, encode(pending.planned), { by: this.by });
        return { info: pending.planned };
      });
      const { owner, info } = result;
      if (this.identity.thread === pending.thread) this.adopt(pending.thread, { ...info, run: info.run ?? '' });
      this.unrecorded = undefined;
      if (owner !== undefined) {
        // served for reading only from now on, as a connection opened on the owned thread is
        this.visiting = { thread: pending.thread, owner };
        throw forbiddenThread(pending.thread, owner);
      }
    })().catch((error: unknown) => {
      pending.recording = undefined;
      throw error;
    });
    await pending.recording;
  }

  threadKey(thread: string): string {
    return this.keys.threadInfo(thread);
  }

  /**
   * Makes `thread` current and joins its run — or starts a new run when `newRun` is set or the thread has none.
   * A given `parentThread` (re)links the thread into that parent's delegation tree. Returns the thread's info as it
   * was before this call.
   */
  async enterThread(thread: string, parentThread: string | undefined, newRun: boolean): Promise<ThreadInfo> {
    const { result } = await this.store.transact((tx) => this.enterThreadIn(tx, thread, parentThread, newRun));
    this.adopt(thread, result.next);
    return result.before;
  }

  /** {@link enterThread}'s writes, inside a caller's transaction; call {@link adopt} with `next` once it commits. */
  async enterThreadIn(
    tx: StoreTx,
    thread: string,
    parentThread: string | undefined,
    newRun: boolean,
  ): Promise<{ before: ThreadInfo; next: ThreadInfo }> {
    const plan = await this.planThread((key) => tx.get(key), thread, parentThread, newRun);
    await tx.set(this.threadKey(thread), encode(plan.next), { by: this.by });
    return plan;
  }

  /** What {@link enterThreadIn} would write, from reads only. */
  private async planThread(
    read: (key: string) => Promise<{ value: Json } | undefined>,
    thread: string,
    parentThread: string | undefined,
    newRun: boolean,
  ): Promise<{ before: ThreadInfo; next: ThreadInfo }> {
    checkName('thread', thread, 'thread');
    if (parentThread !== undefined) checkName('parent thread', parentThread, 'parentThread');
    const known = threadInfoOf((await read(this.threadKey(thread)))?.value);
    let tree: Pick<ThreadInfo, 'parent' | 'root' | 'level'>;
    // A thread's parent, once it has one, does not change, whoever names another: moving it would take it (and what
    // it spends) out from under the budgets above it. A thread with none joins the parent named.
    if (known && (parentThread === undefined || known.parent !== undefined)) {
      tree = { parent: known.parent, root: known.root, level: known.level };
    } else if (parentThread !== undefined && parentThread !== thread) {
      const parent = threadInfoOf((await read(this.threadKey(parentThread)))?.value);
      tree = { parent: parentThread, root: parent?.root ?? parentThread, level: (parent?.level ?? 0) + 1 };
    } else {
      tree = { root: thread, level: 0 };
    }
    const startRun = newRun || known?.run === undefined;
    const run = startRun ? newId() : known!.run!;
    const owner = known ? known.owner : this.identity.agent;
    const next: ThreadInfo = { ...tree, runs: (known?.runs ?? 0) + (startRun ? 1 : 0), run, ...(owner !== undefined ? { owner } : {}) };
    if (next.parent === undefined) delete next.parent;
    return { before: known ?? { root: thread, level: 0, runs: 0 }, next };
  }

  /** Makes this connection serve `thread` as described by its info. */
  adopt(thread: string, info: ThreadInfo): void {
    this.identity = {
      ...this.identity,
      thread,
      run: info.run!,
      parentThread: info.parent,
      rootThread: info.root,
      delegateLevel: info.level,
    };
  }

  /**
   * {@link refresh} after this connection committed a write: a failure to read is not the call's failure (its write
   * is kept), and the next run-scoped operation refreshes again.
   */
  async refreshAfterWrite(): Promise<void> {
    await this.refresh().catch(() => {});
  }

  /** Follows a `run_start` made by another connection on this thread. Call before run-scoped work. */
  async refresh(): Promise<void> {
    const info = threadInfoOf((await this.store.get(this.threadKey(this.identity.thread)))?.value);
    // the run, and the thread's place in the tree (a run_start elsewhere may have given it a parent, whose budgets count)
    if (info?.run) this.adopt(this.identity.thread, info);
  }

  /** Threads above this one, nearest first (for budgets that count a child's steps against its parents). */
  async ancestors(): Promise<string[]> {
    const out: string[] = [];
    let current = this.identity.parentThread;
    while (current !== undefined && out.length < 64 && !out.includes(current)) {
      out.push(current);
      const info = threadInfoOf((await this.store.get(this.threadKey(current)))?.value);
      current = info?.parent;
    }
    return out;
  }

  get by(): string {
    return this.identity.agent ?? 'anonymous';
  }
}

/** The store's reads, each key read once (a session's opening reads a thread's info for two purposes). */
function readOnce(store: VersionedStore): (key: string) => Promise<{ value: Json } | undefined> {
  const seen = new Map<string, Promise<{ value: Json } | undefined>>();
  return (key) => {
    const got = seen.get(key) ?? store.get(key);
    seen.set(key, got);
    return got;
  };
}
