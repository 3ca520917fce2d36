// Public types of what a thread keeps: history, signals, checkpoints and bundles.
import type { Json } from './options.js';

/** One event of a thread's history. */
export interface HistoryEntry {
  seq: number;
  kind: string;
  content: string;
  data?: Json;
  at: string;
  by: string;
}
/** The thread's history: the `history_*` tools. */
export interface HistoryApi {
  /** `history_append` */
  append: (args: { kind: string; content: string; data?: Json; idempotencyKey?: string }) => Promise<{ seq: number }>;
  /**
   * `history_list`: this thread's (or `thread`'s, yours or a child's), newest first; pass `nextCursor` back as
   * `cursor` for the next page, or with `order: 'asc'` pass `nextAfterSeq` back as `afterSeq` to follow the log
   */
  list: (args?: {
    thread?: string;
    afterSeq?: number;
    limit?: number;
    kind?: string;
    order?: 'desc' | 'asc';
    cursor?: string;
  }) => Promise<{ entries: HistoryEntry[]; nextCursor?: string; nextAfterSeq?: number }>;
  /** `history_prune` */
  prune: (args: { keepLast: number; idempotencyKey?: string }) => Promise<{ removed: number }>;
}

/** How an agent is doing. */
export type SignalKind = 'uncertain' | 'explore' | 'commit';
/** A signal as recorded in history. */
export interface SignalEvent {
  seq: number;
  kind: SignalKind;
  confidence?: number;
  note?: string;
  thread: string;
  run: string;
  agent: string | null;
}

/** A saved checkpoint. */
export interface CheckpointInfo {
  checkpointId: string;
  thread: string;
  run: string;
  label?: string;
  createdAt: string;
  /** the thread's revision when saved: pass it as `ifRevision` to restore only if nothing changed since */
  revision: number;
  records: number;
  bytes: number;
}
/** Checkpoints: the `checkpoint_*` tools. */
export interface CheckpointsApi {
  /** `checkpoint_save` */
  save: (args?: { label?: string; idempotencyKey?: string }) => Promise<CheckpointInfo>;
  /** `checkpoint_list`, newest first, `limit` a page (default 100); pass `nextCursor` back as `cursor` */
  list: (args?: { thread?: string; limit?: number; cursor?: string }) => Promise<{ checkpoints: CheckpointInfo[]; nextCursor?: string }>;
  /** `checkpoint_list` with `checkpointId`: one checkpoint and its saved state, every value whole; changes nothing */
  get: (args: { checkpointId: string }) => Promise<{ checkpoint: CheckpointInfo; state: Extract<Bundle, { kind: 'thread' }> }>;
  /** `checkpoint_restore`: atomically */
  restore: (args: {
    checkpointId: string;
    ifRevision?: number;
    idempotencyKey?: string;
  }) => Promise<{ checkpointId: string; thread: string; run: string; records: number; budgetsKept: true }>;
  /** `checkpoint_delete` */
  delete: (args: { checkpointId: string; idempotencyKey?: string }) => Promise<{ deleted: boolean }>;
}

/** One record of a bundle, as stored: value, version, time (epoch ms), author, expiry. */
export interface BundleRecord {
  v: Json;
  ver: number;
  at: number;
  by: string;
  exp?: number;
}
/** A bundle: a thread's or a namespace's state as versioned JSON (what `mcp-blackboard export` writes). */
export type Bundle =
  | { format: number; kind: 'thread'; thread: string; run: string; records: Record<string, BundleRecord> }
  | { format: number; kind: 'namespace'; records: Record<string, BundleRecord> };
/** Bundles: the `export` and `import` commands. */
export interface BundlesApi {
  /** A thread's state (or, without `thread`, the whole namespace's). */
  export: (args?: { thread?: string }) => Promise<Bundle>;
  /**
   * Loads a bundle (object or JSON text); the whole bundle is checked first, a corrupt one changes nothing. It never
   * silently replaces what is there: records the store holds with other values (or, for a thread, records the bundle
   * lacks) make it `VERSION_CONFLICT`, changing nothing, unless `replace` is true. `replaced` and `removed` count them.
   */
  import: (bundle: Bundle | string, options?: { replace?: boolean }) => Promise<{ records: number; replaced: number; removed: number }>;
}
