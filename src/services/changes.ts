// Following the board: the namespace's changes after a revision, filtered by scope and prefix, optionally waiting.
import { BlackboardError, invalid } from '../errors.js';
import { checkPrefix, resolveScope } from '../context.js';
import { FAMILY, PLAN_OWNER, dataRange, familyRange, namespaceRange, parseKey, type KeyRange } from '../keyspace.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { jsonBytes } from '../store/json-text.js';
import type { ChangeRow } from '../store/types.js';
import { checkTimeout } from './arguments.js';
import { fitPage } from './page-fit.js';
import type { Session } from './session.js';

export const CHANGES_DEFAULT_LIMIT = 100;
export const CHANGES_MAX_LIMIT = 1000;
/** A page's JSON besides its changes, at most: `{"changes":[],"revision":N,"timedOut":false}`. */
export const CHANGES_ENVELOPE_BYTES = jsonBytes({ changes: [], revision: Number.MAX_SAFE_INTEGER, timedOut: false });

/** One change as a follower sees it: which key of which scope, at which version and revision, and whether deleted. */
export interface Change {
  scope: string;
  key: string;
  version: number;
  revision: number;
  deleted: boolean;
}

export interface ChangesArgs {
  afterRevision?: number;
  scope?: string;
  prefix?: string;
  limit?: number;
  waitMs?: number;
  /** the most bytes of JSON a page takes, at a revision boundary (its first revision always comes whole) */
  maxBytes?: number;
}

/**
 * The change feed of a namespace for agents: "what changed since revision N", never missing or repeating a change,
 * across processes and machines, because it reads the store's change log rather than the current state.
 */
export class ChangesService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
  ) {}

  async changes(args: ChangesArgs, signal?: AbortSignal): Promise<{ changes: Change[]; revision: number; timedOut?: boolean }> {
    const limit = args.limit ?? CHANGES_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > CHANGES_MAX_LIMIT) {
      throw invalid(`limit must be a whole number from 1 to ${CHANGES_MAX_LIMIT}.`, { limit, path: 'limit' });
    }
    const waitMs = checkTimeout(args.waitMs, 0, 'waitMs');
    if (args.scope === 'run') await this.session.refresh();
    const { range, accept } = this.filter(args.scope, checkPrefix(args.prefix));
    if (args.afterRevision === undefined) return { changes: [], revision: await this.store.revision() };
    const after = args.afterRevision;
    if (!Number.isSafeInteger(after) || after < 0) {
      throw invalid('afterRevision must be a whole number, 0 or more: a revision this server returned.', {
        afterRevision: after,
        path: 'afterRevision',
      });
    }
    let cursor = after;
    const scan = async (): Promise<{ ready: boolean; value: { changes: Change[]; revision: number } }> => {
      for (;;) {
        const page = await this.store.changes({ after: cursor, ...range, limit });
        if (cursor < page.compacted) throw compacted(page.compacted);
        if (cursor === after && after > page.revision) {
          throw invalid(
            `afterRevision ${after} is ahead of this store's revision ${page.revision}: pass a revision this server returned.`,
            {
              afterRevision: after,
              revision: page.revision,
              path: 'afterRevision',
            },
          );
        }
        const changes = page.changes.flatMap((row) => accept(row) ?? []);
        cursor = page.revision;
        if (changes.length > 0) return { ready: true, value: wholeRevisionsWithin(changes, page.revision, args.maxBytes) };
        if (!page.more) return { ready: false, value: { changes, revision: page.revision } };
      }
    };
    if (waitMs === 0) {
      // A wait of no time that found nothing ended as every wait that finds nothing does.
      const { ready, value } = await scan();
      return ready ? value : { ...value, timedOut: true };
    }
    const { value, timedOut } = await this.store.waitFor((wake) => this.store.subscribeRange(range.lo, range.hi, wake), scan, {
      timeoutMs: waitMs,
      signal,
    });
    return { ...value, timedOut };
  }

  /** The key range to read and how a change log row becomes a {@link Change} (or is left out). */
  private filter(scopeArg: string | undefined, prefix: string): { range: KeyRange; accept: (row: ChangeRow) => Change | undefined } {
    const ns = this.session.identity.namespace;
    const plan = scopeArg === 'plan';
    const range = plan
      ? familyRange(ns, FAMILY.plan, PLAN_OWNER)
      : scopeArg === undefined
        ? namespaceRange(ns)
        : dataRange(ns, resolveScope(scopeArg, this.session.identity).id, prefix);
    // the caller's own run and parent scopes by the names the state tools take for them, not their stored labels
    const who = this.session.identity;
    const named = new Map(['run', 'parent'].map((form) => [resolveScope(form, who).id, form]));
    const accept = (row: ChangeRow): Change | undefined => {
      const parsed = parseKey(ns, row.key);
      if (!parsed) return undefined;
      let scope: string;
      if (parsed.kind === 'data') scope = named.get(parsed.scope) ?? parsed.scope;
      // Plans appear as scope `plan`, keyed by plan id; other families' records are internal and never do.
      else if (parsed.family === FAMILY.plan && parsed.owner === PLAN_OWNER) scope = 'plan';
      else return undefined;
      if (!parsed.key.startsWith(prefix)) return undefined;
      return { scope, key: parsed.key, version: row.version, revision: row.revision, deleted: row.deleted };
    };
    return { range, accept };
  }
}

/**
 * The first changes that fit `maxBytes` of JSON with whole revisions only (the first revision always comes), and the
 * revision to continue from: the last one given when the page ends early — every change up to it has been given, and
 * none after it — else `revision`, how far the read went.
 */
function wholeRevisionsWithin(
  changes: Change[],
  revision: number,
  maxBytes = Number.POSITIVE_INFINITY,
): { changes: Change[]; revision: number } {
  const page = fitPage(byRevision(changes), maxBytes, (group) => group.reduce((n, change) => n + jsonBytes(change) + 1, 0), {
    used: CHANGES_ENVELOPE_BYTES,
  });
  if (!page.stopped) return { changes, revision };
  const kept = page.kept.flat();
  return { changes: kept, revision: kept[kept.length - 1].revision };
}

/** `changes` in runs of one revision each, in order. */
function byRevision(changes: Change[]): Change[][] {
  const groups: Change[][] = [];
  for (const change of changes) {
    const group = groups.at(-1);
    if (group !== undefined && group[0].revision === change.revision) group.push(change);
    else groups.push([change]);
  }
  return groups;
}

function compacted(oldestRevision: number): BlackboardError {
  return new BlackboardError(
    'REVISION_COMPACTED',
    `Changes up to revision ${oldestRevision} are no longer kept, so some after your afterRevision may be gone. Read the current state with {tool:state_snapshot}, then follow from the revision it returns.`,
    { oldestRevision },
  );
}
