// A board snapshot made to fit a tool reply: texts cut shorter, then the least recent items left out, until its JSON
// is within a byte budget (board_show and board_wait answer within about 16 KiB, as every default reply does).
import type { Json } from '../store/types.js';
import { cutJson, cutKey, cutText, withStepsShown, type BoardSnapshot } from './board-views.js';

/** The structured board's budget: with the text summary beside it, a reply stays within about 16 KiB. */
export const BOARD_BYTES = 14 * 1024;

/** How much of each text a board over its budget keeps, in characters (the snapshot's own cuts are longer). */
const SHORT = { value: 160, text: 160, answer: 400, message: 300 } as const;

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/** Each item's JSON size, measured once (a cut makes new objects of what it changes, so none goes stale). */
const sizes = new WeakMap<object, number>();
function sizeOf(item: object): number {
  let bytes = sizes.get(item);
  if (bytes === undefined) {
    bytes = bytesOf(item);
    sizes.set(item, bytes);
  }
  return bytes;
}

/** A list's JSON size: its brackets, its items and the commas between them. */
const listBytes = (list: object[]): number => list.reduce((n: number, item) => n + sizeOf(item), 2 + Math.max(0, list.length - 1));

/** The board's JSON size: the rest of it with its lists empty, plus what each list adds. */
function boardBytes(board: BoardSnapshot): number {
  const team = board.team;
  const lists: object[][] = [board.scopes ?? [], board.plans ?? [], board.threads ?? [], team?.roster ?? [], team?.messages ?? []];
  const rest = {
    ...board,
    ...(board.scopes ? { scopes: [] } : {}),
    ...(board.plans ? { plans: [] } : {}),
    ...(board.threads ? { threads: [] } : {}),
    ...(team ? { team: { ...team, roster: [], messages: [] } } : {}),
  };
  return lists.reduce((n, list) => n + listBytes(list) - 2, bytesOf(rest));
}

/** A part of the board that can give up items: its size now, and a cut of about a quarter of them. */
interface Part {
  bytes: number;
  cut(): void;
}

/**
 * `board` within `budget` bytes of JSON: unchanged when it fits; otherwise every long text cut to {@link SHORT}, then,
 * while it is still over, the largest part gives up a quarter of its items (the oldest keys, history events and
 * messages, the last plans, threads and roster entries, a plan's finished steps and then its last ones, the last of
 * the steps a thread or agent holds). What is left out is counted in `hidden` (keys, plans, threads),
 * `team.messagesHidden`, a plan's `stepCounts`, a thread's `holdsHidden` and a roster entry's `holdingHidden`.
 */
export function fitBoard(board: BoardSnapshot, budget = BOARD_BYTES): BoardSnapshot {
  if (bytesOf(board) <= budget) return board;
  const out = shortened(board);
  for (let round = 0; round < 500 && boardBytes(out) > budget; round++) {
    const largest = parts(out)
      .filter((part) => part.bytes > 0)
      .sort((a, b) => b.bytes - a.bytes)[0];
    if (largest === undefined) break;
    largest.cut();
  }
  return out;
}

/** A copy of the board with every text at most as long as {@link SHORT} says. */
function shortened(board: BoardSnapshot): BoardSnapshot {
  const out: BoardSnapshot = { ...board, hidden: { ...board.hidden } };
  if (board.scopes) {
    out.scopes = board.scopes.map((s) => ({
      scope: s.scope,
      keys: s.keys.map((k) => cutKey(k, SHORT.value)),
    }));
  }
  if (board.plans) {
    out.plans = board.plans.map((p) => ({
      ...p,
      steps: p.steps.map((s) => ({
        ...s,
        content: cutText(s.content, SHORT.text),
        ...(s.note !== undefined ? { note: cutText(s.note, SHORT.text) } : {}),
      })),
    }));
  }
  if (board.threads) {
    out.threads = board.threads.map((t) => ({
      ...t,
      ...(t.reason !== undefined ? { reason: cutText(t.reason, SHORT.text) } : {}),
      ...(t.finalAnswer
        ? {
            finalAnswer: {
              ...t.finalAnswer,
              content: cutText(t.finalAnswer.content, SHORT.answer),
              ...(t.finalAnswer.metadata !== undefined ? { metadata: cutJson(t.finalAnswer.metadata, SHORT.text) } : {}),
            },
          }
        : {}),
      history: t.history.map((e) => ({
        ...e,
        content: cutText(e.content, SHORT.text),
        ...(e.data !== undefined ? { data: cutJson(e.data as Json, SHORT.text) } : {}),
      })),
    }));
  }
  if (board.team) {
    out.team = {
      ...board.team,
      roster: [...board.team.roster],
      messages: board.team.messages.map((m) =>
        m.content.length > SHORT.message ? { ...m, content: m.content.slice(0, SHORT.message), cut: true as const } : m,
      ),
    };
  }
  return out;
}

/** How many of `n` items a cut leaves out: a quarter, at least one. */
const quarter = (n: number): number => Math.max(1, Math.ceil(n / 4));

/** The parts of the board that can give up items, each with its size now. */
function parts(board: BoardSnapshot): Part[] {
  const out: Part[] = [];
  const scopes = board.scopes;
  if (scopes && scopes.length > 0) {
    out.push({
      bytes: listBytes(scopes),
      cut: () => {
        const all = scopes.flatMap((s) => s.keys).sort((a, b) => a.updatedAt - b.updatedAt);
        const gone = new Set(all.slice(0, quarter(all.length)));
        board.hidden.keys += gone.size;
        board.scopes = scopes.map((s) => ({ scope: s.scope, keys: s.keys.filter((k) => !gone.has(k)) })).filter((s) => s.keys.length > 0);
      },
    });
  }
  const plans = board.plans;
  if (plans && plans.length > 0) {
    out.push(
      lastLeftOut(plans, (kept, n) => {
        board.plans = kept;
        board.hidden.plans += n;
      }),
    );
    for (const [i, plan] of plans.entries()) {
      if (plan.steps.length > 0) {
        out.push({
          bytes: listBytes(plan.steps),
          cut: () => (plans[i] = withStepsShown(plan, plan.steps.length - quarter(plan.steps.length))),
        });
      }
    }
  }
  const threads = board.threads;
  if (threads && threads.length > 0) {
    out.push(
      lastLeftOut(threads, (kept, n) => {
        board.threads = kept;
        board.hidden.threads += n;
      }),
    );
    for (const [i, thread] of threads.entries()) {
      const holds = thread.holds ?? [];
      out.push(lastLeftOut(holds, (kept, n) => (threads[i] = { ...threads[i], holds: kept, holdsHidden: (thread.holdsHidden ?? 0) + n })));
      if (thread.history.length > 0) {
        out.push({
          bytes: listBytes(thread.history),
          cut: () => (threads[i] = { ...thread, history: thread.history.slice(quarter(thread.history.length)) }),
        });
      }
    }
  }
  const team = board.team;
  if (team) {
    if (team.messages.length > 0) {
      out.push({
        bytes: listBytes(team.messages),
        cut: () => {
          const n = quarter(team.messages.length);
          team.messagesHidden += n;
          team.messages = team.messages.slice(n);
        },
      });
    }
    out.push(lastLeftOut(team.roster, (kept) => (team.roster = kept)));
    for (const [i, member] of team.roster.entries()) {
      out.push(
        lastLeftOut(member.holding, (kept, n) => {
          team.roster[i] = { ...member, holding: kept, holdingHidden: (member.holdingHidden ?? 0) + n };
        }),
      );
    }
  }
  return out;
}

/** A part that leaves out the last quarter of `list` (its first item always stays) and hands back what it kept. */
function lastLeftOut<T extends object>(list: T[], keep: (kept: T[], leftOut: number) => void): Part {
  return {
    bytes: list.length > 1 ? listBytes(list) : 0,
    cut: () => {
      const n = Math.min(list.length - 1, quarter(list.length));
      keep(list.slice(0, list.length - n), n);
    },
  };
}
