// Every record family the services store, declared once: its stored name, key shape, checkpoint and board membership.

/**
 * A record family: records a service keeps in an internal scope `~<stored>:<owner>` that no tool argument can name.
 * The keyspace builds its keys from `stored`, a thread's checkpoint takes what `checkpoint` says, the board watches
 * the families of its `section`, and `test/families.test.ts` decodes every stored record with the family's schema
 * (`src/families/schemas.ts`). Adding a family is one entry here plus its service.
 */
export interface FamilyDeclaration {
  /** the name in every storage key of the family: renaming it orphans the records already stored */
  stored: string;
  /** whose records they are (the owner part of the key) */
  owner:
    | 'thread'
    | 'plan id (owner "id")'
    | 'scope'
    | 'all'
    | 'content hash (owner "v")'
    | 'thread index (owner "meta")'
    | 'agent name (- for none)'
    | 'agent name'
    | 'agent type'
    | 'awaited recipient (a.AGENT, t.THREAD or y.TYPE)';
  /** what the last part of the key is; a fixed word when the owner has exactly one record */
  key: string;
  /**
   * In a thread's checkpoint: `owner` = every record the thread owns (a range), `run` = the record of the thread's
   * current run, `record` = the thread's one record (`key`); absent = not part of a checkpoint.
   */
  checkpoint?: 'owner' | 'run' | 'record';
  /** which section of the board shows the family (and re-reads when it changes) */
  section?: 'plans' | 'threads';
}

/** The families, by the name services use. The order is the order a checkpoint lists ranges and records. */
export const FAMILIES = {
  plan: { stored: 'plan', owner: 'plan id (owner "id")', key: 'plan id', section: 'plans' },
  planIndex: { stored: 'plan-index', owner: 'scope', key: 'plan id' },
  budget: {
    stored: 'budget',
    owner: 'thread',
    key: "budget name, or the marker that fixes the thread's maxes",
    checkpoint: 'owner',
    section: 'threads',
  },
  history: { stored: 'history', owner: 'thread', key: 'e:<sequence number, zero-padded>', checkpoint: 'owner', section: 'threads' },
  scratchpad: { stored: 'scratchpad', owner: 'thread', key: 'run id', checkpoint: 'run' },
  final: { stored: 'final', owner: 'thread', key: 'answer', checkpoint: 'record', section: 'threads' },
  lifecycle: { stored: 'lifecycle', owner: 'thread', key: 'state', checkpoint: 'record', section: 'threads' },
  historySeq: { stored: 'history-seq', owner: 'thread', key: 'seq', checkpoint: 'record', section: 'threads' },
  thread: { stored: 'thread', owner: 'thread index (owner "meta")', key: 'thread id', section: 'threads' },
  checkpoint: { stored: 'cp', owner: 'all', key: 'checkpoint id' },
  checkpointIndex: { stored: 'cp-index', owner: 'thread', key: 'checkpoint id' },
  checkpointHead: { stored: 'cp-head', owner: 'thread index (owner "meta")', key: 'thread id' },
  blob: { stored: 'cp-blob', owner: 'content hash (owner "v")', key: 'sha-256 of the value' },
  blobRefs: { stored: 'cp-ref', owner: 'content hash (owner "v")', key: 'sha-256 of the value' },
  presence: { stored: 'presence', owner: 'thread', key: 'agent name (- for none)', section: 'threads' },
  // copies of each sign of life, written and expiring with it, that mail to a name or a type reads (presence-index.ts)
  presenceByAgent: { stored: 'presence-agent', owner: 'agent name', key: 'thread' },
  presenceByType: { stored: 'presence-type', owner: 'agent type', key: 'agent name (- for none), ":", thread' },
  presenceIndexed: { stored: 'presence-index', owner: 'all', key: 'since' },
  message: { stored: 'message', owner: 'all', key: 'sequence number, zero-padded', section: 'threads' },
  messageSeq: { stored: 'message-seq', owner: 'all', key: 'seq' },
  mailbox: { stored: 'mailbox', owner: 'agent name (- for none)', key: 'thread:sequence number' },
  mailboxWait: { stored: 'mailbox-wait', owner: 'awaited recipient (a.AGENT, t.THREAD or y.TYPE)', key: 'sequence number' },
  inboxPosition: { stored: 'inbox-pos', owner: 'agent name (- for none)', key: 'thread' },
} as const satisfies Record<string, FamilyDeclaration>;

export type FamilyName = keyof typeof FAMILIES;

/** Each family's stored name, by the name services use: `STORED.budget` is `'budget'`. */
export const STORED = Object.fromEntries(Object.entries(FAMILIES).map(([name, f]) => [name, f.stored])) as {
  readonly [K in FamilyName]: (typeof FAMILIES)[K]['stored'];
};

/** The declarations, in order, with the name services use. */
export const declarations = (): Array<FamilyDeclaration & { name: FamilyName }> =>
  (Object.entries(FAMILIES) as Array<[FamilyName, FamilyDeclaration]>).map(([name, f]) => ({ name, ...f }));

/** The stored names of the families a board section shows. */
export const familiesOfSection = (section: 'plans' | 'threads'): string[] =>
  declarations()
    .filter((f) => f.section === section)
    .map((f) => f.stored);

/** The stored names of checkpoints' own records, left out of namespace exports. */
export const CHECKPOINT_RECORDS: readonly string[] = [
  FAMILIES.checkpoint.stored,
  FAMILIES.checkpointIndex.stored,
  FAMILIES.checkpointHead.stored,
  FAMILIES.blob.stored,
  FAMILIES.blobRefs.stored,
];
