// The board as a tool result: a bounded snapshot of one namespace's board, and a wait for its next change.
import { invalid } from '../errors.js';
import { checkTimeout } from '../services/arguments.js';
import type { RosterTimes } from '../services/roster.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { fitBoard } from './board-fit.js';
import { BoardReader, readOnlyView, type BoardView } from './board-reader.js';
import { cutKey, type BoardSnapshot } from './board-views.js';
import { DEFAULT_NAMESPACE, SECTIONS, boardWaitRanges, type Section } from './layout.js';
import { done } from '../services/plan-steps.js';

export type { BoardSnapshot } from './board-views.js';

/** What the board tools read through: the store's reads, its change feed and its wait (never its writes). */
export type BoardStore = Pick<VersionedStore, 'list' | 'revision' | 'subscribeRange' | 'subscribeRanges' | 'changes' | 'waitFor'>;

/** What a snapshot keeps: the most recently changed keys, plans and threads, values and histories cut short. */
const SNAPSHOT = { keys: 120, plans: 20, threads: 24, valueChars: 240, history: 6 } as const;

/** The board's sections by the names the tools take. */
export const BOARD_SECTIONS = { keys: 'scopes', plans: 'plans', threads: 'threads' } as const satisfies Record<string, Section>;
export type BoardSectionName = keyof typeof BOARD_SECTIONS;

export class BoardService {
  private readonly reader: BoardReader;

  private readonly namespace: string;

  constructor(
    private readonly store: BoardStore,
    /** the caller's namespace (none: the default one) */
    namespace: string | undefined,
    /** the roster's clocks (`--claim-lease`, `--roster-window`) */
    times?: RosterTimes,
  ) {
    this.reader = new BoardReader(readOnlyView(store), times);
    this.namespace = namespace ?? DEFAULT_NAMESPACE;
  }

  /** The caller's namespace's board (one section, or all), bounded in items and in bytes. */
  async show(section?: BoardSectionName): Promise<BoardSnapshot> {
    const sections = section === undefined ? [...SECTIONS] : [BOARD_SECTIONS[section]];
    const view = await this.reader.board(this.namespace, sections, { recentKeys: SNAPSHOT.keys });
    return fitBoard(snapshot(view, sections));
  }

  /**
   * Waits up to `waitMs` for a change to the board after `afterRevision` (keys, plans, thread records: not callers'
   * signs of life, which every call renews), then returns the board as {@link show} does, with `timedOut` when
   * nothing changed. Never writes.
   */
  async next(afterRevision: number, waitMs: number, section?: BoardSectionName, signal?: AbortSignal): Promise<BoardSnapshot> {
    const timeoutMs = checkTimeout(waitMs, 0, 'waitMs');
    const current = await this.store.revision();
    if (afterRevision > current) {
      throw invalid(
        `afterRevision ${afterRevision} is ahead of this store's revision ${current}: pass back the revision a board reply gave.`,
        {
          afterRevision,
          revision: current,
          path: 'afterRevision',
        },
      );
    }
    const ranges = boardWaitRanges(this.namespace);
    const { timedOut } = await this.store.waitFor(
      (wake) => this.store.subscribeRanges(ranges, wake),
      async () => {
        for (const range of ranges) {
          const page = await this.store.changes({ after: afterRevision, ...range, limit: 1 });
          if (page.changes.length > 0 || afterRevision < page.compacted) return { ready: true, value: undefined };
        }
        return { ready: false, value: undefined };
      },
      { timeoutMs, signal },
    );
    const board = await this.show(section);
    return timedOut ? { ...board, timedOut } : board;
  }
}

/** A board cut to {@link SNAPSHOT}: the most recently updated keys (values cut), plans and threads first. */
function snapshot(view: BoardView, sections: Section[]): BoardSnapshot {
  const hidden = { keys: 0, plans: 0, threads: 0 };
  const { keysTotal: _read, ...rest } = view;
  const out: BoardSnapshot = { ...rest, at: Date.now(), hidden, sections };
  if (view.scopes) {
    const all = view.scopes.flatMap((s) => s.keys.map((k) => ({ scope: s.scope, k })));
    const kept = new Set(
      [...all]
        .sort((a, b) => b.k.updatedAt - a.k.updatedAt)
        .slice(0, SNAPSHOT.keys)
        .map((x) => x.k),
    );
    hidden.keys = (view.keysTotal ?? all.length) - kept.size;
    out.scopes = view.scopes
      .map((s) => ({
        scope: s.scope,
        keys: s.keys.filter((k) => kept.has(k)).map((k) => cutKey(k, SNAPSHOT.valueChars)),
      }))
      .filter((s) => s.keys.length > 0);
  }
  if (view.plans) {
    hidden.plans = Math.max(0, view.plans.length - SNAPSHOT.plans);
    out.plans = view.plans.slice(0, SNAPSHOT.plans);
  }
  if (view.threads) {
    hidden.threads = Math.max(0, view.threads.length - SNAPSHOT.threads);
    out.threads = view.threads.slice(0, SNAPSHOT.threads).map((t) => ({ ...t, history: t.history.slice(-SNAPSHOT.history) }));
  }
  return out;
}

/** The board in a few lines of text, for hosts that do not render apps (and for the model). */
export function boardSummary(board: BoardSnapshot): string {
  const lines: string[] = [
    `Board of namespace ${board.namespace === DEFAULT_NAMESPACE ? '(default)' : board.namespace} at revision ${board.revision}.`,
  ];
  if (board.threads) {
    lines.push(`Threads (${board.threads.length + board.hidden.threads}):`);
    for (const t of board.threads.slice(0, 8)) {
      const budgets = t.budgets.map((b) => `${b.name} ${b.current}${b.max !== undefined ? `/${b.max}` : ''}`).join(', ');
      const answer = t.finalAnswer ? ` · final answer: ${oneLine(t.finalAnswer.content, 80)}` : '';
      lines.push(`- ${t.thread} [${t.activity ?? t.state}]${t.agent ? ` agent ${t.agent}` : ''}${budgets ? ` · ${budgets}` : ''}${answer}`);
    }
  }
  if (board.plans) {
    lines.push(`Plans (${board.plans.length + board.hidden.plans}):`);
    for (const p of board.plans.slice(0, 8)) {
      const steps = p.stepCounts ?? { done: p.steps.filter(done).length, total: p.steps.length };
      const held = p.steps.filter((s) => s.claim).map((s) => `${s.id} held by ${s.owner ?? s.claim!.thread}`);
      lines.push(`- ${p.title} (${p.planId}) ${p.status} ${steps.done}/${steps.total}${held.length ? ` · ${held.join(', ')}` : ''}`);
    }
  }
  if (board.team) {
    const { roster, rosterTotal, messages } = board.team;
    const agents = roster
      .slice(0, 8)
      .map(
        (a) => `${a.agent ?? '(no name)'} [${a.status}]${a.holding.length ? ` holds ${a.holding.map((s) => s.stepId).join(', ')}` : ''}`,
      );
    lines.push(`Team (${rosterTotal} on the roster): ${agents.join('; ') || 'none'}`);
    const last = messages[messages.length - 1];
    if (last) lines.push(`Last message: ${last.from} → ${last.to}: ${oneLine(last.content, 80)}`);
  }
  if (board.scopes) {
    const keys = board.scopes.reduce((n, s) => n + s.keys.length, 0) + board.hidden.keys;
    const recent = board.scopes
      .flatMap((s) => s.keys.map((k) => ({ s: s.scope, k })))
      .sort((a, b) => b.k.updatedAt - a.k.updatedAt)
      .slice(0, 6)
      .map(({ s, k }) => `${s}/${k.key} = ${oneLine(k.value, 60)}`);
    lines.push(
      `Keys (${keys} in ${board.scopes.length} scope${board.scopes.length === 1 ? '' : 's'}), latest: ${recent.join('; ') || 'none'}`,
    );
  }
  return lines.join('\n');
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
