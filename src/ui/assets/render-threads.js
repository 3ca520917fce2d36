// The renderer's thread cards: a thread's activity, lifecycle, holds, budgets, final answer and recent events; and the
// order threads are shown in.
import { bar, h, keyed, mark, plural, short, threadAnchor, threadLink } from './render-dom.js';
import { time } from './render-time.js';

const SIGNAL_ICONS = { commit: '●', explore: '◆', uncertain: '▲' };
const HISTORY_VISIBLE = 5;

function renderBudgets(budgets) {
  if (!budgets.length) return null;
  return h('div', { class: 'budgets' }, budgets.map((b) =>
    h('div', { class: 'budget' },
      h('div', { class: 'label' }, h('span', {}, b.name), h('b', {}, b.max !== undefined ? `${b.current} / ${b.max}` : String(b.current))),
      b.max !== undefined ? bar(b.current, b.max, `budget ${b.name}: ${b.current} of ${b.max}`) : null,
    )));
}

function signalText(e) {
  const data = e.data && typeof e.data === 'object' ? e.data : {};
  const parts = [];
  if (typeof data.confidence === 'number') parts.push(`confidence ${data.confidence}`);
  if (typeof data.note === 'string') parts.push(data.note);
  return parts.join(' · ');
}

function renderEvent(e) {
  const isSignal = e.kind === 'signal';
  const what = isSignal
    ? h('span', { class: `signal sig-${e.content}` }, `${SIGNAL_ICONS[e.content] ?? '•'} ${e.content}`, signalText(e) ? h('span', { class: 'note' }, ` — ${signalText(e)}`) : null)
    : h('span', {}, e.content || (e.data !== undefined ? JSON.stringify(e.data) : ''));
  return h('li', { class: `event${isSignal ? ' signal-event' : ''}` },
    h('span', { class: 'seq' }, `#${e.seq}`),
    h('span', { class: 'kind', title: e.kind }, e.kind),
    h('span', { class: 'what' }, what),
    h('span', { class: 'when' }, e.by ? `${e.by} · ` : '', time(e.at)),
  );
}

/** Threads that need a person first, then working ones, then the done ones (answers), then the rest; recent first. */
const ACTIVITY_ORDER = ['needs input', 'error', 'paused', 'working', 'done', 'quiet', 'stopped'];
const rank = (t) => {
  const i = ACTIVITY_ORDER.indexOf(t.activity ?? '');
  return i < 0 ? ACTIVITY_ORDER.length : i;
};
export const sortThreads = (threads) => [...threads].sort((a, b) => rank(a) - rank(b) || Math.max(b.lastActivity, b.lastSeen ?? 0) - Math.max(a.lastActivity, a.lastSeen ?? 0));

export function renderThread(t) {
  const newestFirst = [...t.history].reverse();
  const lastSignal = newestFirst.find((e) => e.kind === 'signal');
  const answerIsCurrent = t.finalAnswer && (!t.run || t.finalAnswer.run === t.run);
  const activity = t.activity ?? t.state;
  const card = h('article', { class: `card thread t-${activity.replaceAll(' ', '_')}`, id: threadAnchor(t.thread), dataset: { thread: t.thread } },
    h('div', { class: 'card-head' },
      h('div', { class: 'card-title' },
        h('span', { class: `badge a-${activity.replaceAll(' ', '_')}` }, activity),
        h('h3', { class: 'mono', title: t.thread }, t.thread),
      ),
      lastSignal ? h('span', { class: `signal sig-${lastSignal.content}`, title: signalText(lastSignal) }, `${SIGNAL_ICONS[lastSignal.content] ?? '•'} ${lastSignal.content}`) : null,
    ),
    h('div', { class: 'meta' },
      t.agent ? h('span', {}, 'agent ', h('b', {}, t.agent)) : null,
      t.state !== 'loading' ? h('span', {}, 'lifecycle ', t.state.replaceAll('_', ' ')) : null,
      t.run ? h('span', { title: t.run }, 'run ', h('span', { class: 'mono' }, short(t.run)), t.runs > 1 ? ` (${t.runs} runs)` : '') : null,
      t.parent ? h('span', {}, 'child of ', threadLink(t.parent, h('span', { class: 'mono' }, short(t.parent)))) : null,
      t.lastSeen ? h('span', {}, 'last call ', time(t.lastSeen)) : t.lastActivity ? h('span', {}, 'active ', time(t.lastActivity)) : null,
    ),
    t.holds?.length
      ? h('div', { class: 'holds' }, 'holds ', t.holds.map((c, i) => [i ? ', ' : '', h('b', {}, c.step), ` of ${short(c.planId)} (lease ends `, time(c.leaseUntil, 'until'), ')']), t.holdsHidden ? ` and ${plural(t.holdsHidden, 'more step')}` : null)
      : null,
    t.reason ? h('div', { class: 'reason' }, `“${t.reason}”`) : null,
    renderBudgets(t.budgets),
    t.finalAnswer
      ? h('div', { class: `final${answerIsCurrent ? '' : ' old'}` },
          h('div', { class: 'label' }, answerIsCurrent ? 'Final answer' : 'Final answer of an earlier run'),
          h('div', { class: 'text' }, t.finalAnswer.content),
          h('div', { class: 'meta' }, h('span', {}, `set by ${t.finalAnswer.setBy} `, time(t.finalAnswer.setAt))),
        )
      : null,
    t.history.length
      ? h('div', { class: 'history' },
          h('ol', { class: 'events', reversed: true }, newestFirst.slice(0, HISTORY_VISIBLE).map(renderEvent)),
          newestFirst.length > HISTORY_VISIBLE
            ? h('details', { class: 'more', dataset: { fold: `history:${t.thread}` } },
                h('summary', {}, `${plural(newestFirst.length - HISTORY_VISIBLE, 'earlier event')}`),
                h('ol', { class: 'events' }, newestFirst.slice(HISTORY_VISIBLE).map(renderEvent)))
            : null,
        )
      : null,
  );
  return keyed(mark(card, `thread:${t.thread}`, `${t.lastActivity}:${activity}:${t.lastSeq}`), `thread:${t.thread}`, t);
}
