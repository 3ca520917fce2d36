// The board's timeline: the namespace's most recent changes (who wrote what, when), read from the change log, and
// one key's changes as far back as the log keeps them.
import type { BoardSource } from './board-reader.js';
import { FAMILY, PLAN_OWNER, parseKey, recordsOf, userKeys } from './layout.js';

export interface TimelineItem {
  revision: number;
  /** what changed, as a person reads it: `global/task`, `plan p-1…`, `final answer of worker-1`… */
  what: string;
  /** `key`, `plan`, `final`, `lifecycle`, `budget`, `history` */
  kind: string;
  version: number;
  deleted: boolean;
  /** who wrote this version and when (absent when a later write replaced it or it is gone) */
  by?: string;
  at?: number;
}

export interface Timeline {
  revision: number;
  items: TimelineItem[];
  /** the change log keeps nothing at or before this revision */
  compacted: number;
}

/** The families a timeline shows (callers' signs of life and indexes are noise to a person). */
const SHOWN: Record<string, string> = {
  [FAMILY.plan]: 'plan',
  [FAMILY.final]: 'final',
  [FAMILY.lifecycle]: 'lifecycle',
  [FAMILY.budget]: 'budget',
  [FAMILY.history]: 'history',
};

function describe(namespace: string, storageKey: string): { what: string; kind: string } | undefined {
  const parsed = parseKey(namespace, storageKey);
  if (!parsed) return undefined;
  if (parsed.kind === 'data') return { what: `${parsed.scope}/${parsed.key}`, kind: 'key' };
  const kind = SHOWN[parsed.family];
  if (!kind || (kind === 'plan' && parsed.owner !== PLAN_OWNER)) return undefined;
  const what =
    kind === 'plan'
      ? `plan ${parsed.key}`
      : kind === 'final'
        ? `final answer of ${parsed.owner}`
        : kind === 'lifecycle'
          ? `lifecycle of ${parsed.owner}`
          : kind === 'budget'
            ? `budget ${parsed.key} of ${parsed.owner}`
            : `event in ${parsed.owner}`;
  return { what, kind };
}

/**
 * The last `limit` changes of a namespace (or of one of its user keys: `scope` and `key`), newest first. The log is
 * read backwards in growing windows, since revisions count every namespace's writes.
 */
export async function timeline(
  source: BoardSource,
  namespace: string,
  limit = 40,
  only?: { scope: string; key: string },
): Promise<Timeline> {
  const revision = await source.revision();
  const range = only ? userKeys(namespace) : recordsOf(namespace);
  let window = 256;
  let rows: Array<{ key: string; revision: number; version: number; deleted: boolean }> = [];
  let compacted = 0;
  for (;;) {
    const after = Math.max(0, revision - window);
    const found: typeof rows = [];
    let cursor = after;
    for (let pages = 0; pages < 20; pages++) {
      const page = await source.changes({ after: cursor, ...range, limit: 1000 });
      compacted = page.compacted;
      for (const row of page.changes) {
        const d = describe(namespace, row.key);
        if (d && (!only || d.what === `${only.scope}/${only.key}`)) found.push(row);
      }
      if (!page.more) break;
      cursor = page.revision;
    }
    rows = found;
    if (rows.length >= limit || after <= compacted || after === 0 || window > 1 << 22) break;
    window *= 4;
  }
  const items: TimelineItem[] = [];
  for (const row of rows.slice(-limit).reverse()) {
    const d = describe(namespace, row.key)!;
    const { entries } = await source.list({ lo: row.key, hi: `${row.key}\u0000`, limit: 1 });
    const entry = entries[0]?.[0] === row.key ? entries[0][1] : undefined;
    const current = !row.deleted && entry?.version === row.version;
    items.push({
      revision: row.revision,
      ...d,
      version: row.version,
      deleted: row.deleted,
      ...(current ? { by: entry.updatedBy, at: entry.updatedAt } : {}),
    });
  }
  return { revision, items, compacted };
}
