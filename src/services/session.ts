import { randomUUID } from 'node:crypto';
import { checkName, internalKey, type Identity } from '../context.js';
import type { VersionedStore } from '../store/versioned-store.js';

export interface SessionOptions {
  namespace?: string;
  agent?: string;
  agentType?: string;
  thread?: string;
  parentThread?: string;
}

/** What is remembered about a thread: where it sits in its delegation tree. */
export interface ThreadInfo {
  parent?: string;
  root: string;
  level: number;
  runs: number;
}

export const newId = (): string => randomUUID();

/**
 * The identity of one connection. It changes only through `run_start`; services read it on every call, so a
 * thread switch applies to the very next tool call.
 */
export class Session {
  constructor(public identity: Identity) {}

  static async open(store: VersionedStore, options: SessionOptions): Promise<Session> {
    const session = new Session({
      namespace: options.namespace,
      agent: options.agent === undefined ? undefined : checkName('agent', options.agent),
      agentType: options.agentType === undefined ? undefined : checkName('agent type', options.agentType),
      thread: options.thread === undefined ? newId() : checkName('thread', options.thread),
      run: newId(),
      rootThread: '',
      delegateLevel: 0,
    });
    await session.enterThread(store, session.identity.thread, options.parentThread);
    return session;
  }

  /**
   * Makes `thread` current, recording its parent the first time it is seen (the parent link is fixed after that).
   * Returns whether the thread had runs before.
   */
  async enterThread(store: VersionedStore, thread: string, parentThread: string | undefined): Promise<ThreadInfo> {
    checkName('thread', thread);
    if (parentThread !== undefined) checkName('parent thread', parentThread);
    const who = this.identity;
    const { result: info } = await store.transact(async (tx) => {
      const key = internalKey(who, 'thread', 'meta', thread);
      const known = (await tx.get(key))?.value as ThreadInfo | undefined;
      let info: ThreadInfo;
      if (known && (parentThread === undefined || known.parent === parentThread)) {
        info = known;
      } else if (parentThread !== undefined && parentThread !== thread) {
        const parent = (await tx.get(internalKey(who, 'thread', 'meta', parentThread)))?.value as ThreadInfo | undefined;
        info = { parent: parentThread, root: parent?.root ?? parentThread, level: (parent?.level ?? 0) + 1, runs: known?.runs ?? 0 };
      } else {
        info = { root: thread, level: 0, runs: known?.runs ?? 0 };
      }
      const next = { ...info, runs: info.runs + 1 };
      await tx.set(key, next as never, { by: who.agent ?? 'anonymous' });
      return info;
    });
    this.identity = {
      ...who,
      thread,
      parentThread: info.parent,
      rootThread: info.root,
      delegateLevel: info.level,
    };
    return info;
  }

  /** Threads above this one, nearest first (for budgets that count a child's steps against its parents). */
  async ancestors(store: VersionedStore): Promise<string[]> {
    const out: string[] = [];
    let current = this.identity.parentThread;
    while (current !== undefined && out.length < 64 && !out.includes(current)) {
      out.push(current);
      const info = (await store.get(internalKey(this.identity, 'thread', 'meta', current)))?.value as ThreadInfo | undefined;
      current = info?.parent;
    }
    return out;
  }

  get by(): string {
    return this.identity.agent ?? 'anonymous';
  }
}
