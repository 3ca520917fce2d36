// The renderer's team section: the roster's agents and the messages kept.
import { empty, h, mark, plural, short, threadLink } from './render-dom.js';
import { time } from './render-time.js';

/** An agent's roster status as a badge, in the colours of a thread's activity. */
const STATUS_CLASS = { active: 'a-working', idle: 'a-quiet', gone: 'a-stopped' };
const agentName = (a) => a.agent ?? '(no agent name)';
const recipientName = (r) => r.agent ?? `thread ${short(r.thread)}`;

function renderAgent(a) {
  const card = h('li', { class: 'card agent', dataset: { agent: a.agent ?? '', thread: a.thread } },
    h('div', { class: 'card-head' },
      h('div', { class: 'card-title' },
        h('span', { class: `badge ${STATUS_CLASS[a.status] ?? ''}`, title: `status: ${a.status}` }, a.status),
        h('h3', {}, agentName(a))),
      a.unread ? h('span', { class: 'chip unread', title: 'messages it has not acknowledged' }, `${a.unread} unread`) : null,
    ),
    h('div', { class: 'meta' },
      a.agentType ? h('span', {}, 'type ', h('b', {}, a.agentType)) : null,
      h('span', {}, 'thread ', threadLink(a.thread, h('span', { class: 'mono', title: a.thread }, short(a.thread)))),
      a.client ? h('span', {}, 'client ', a.client) : null,
      h('span', {}, 'last seen ', time(Date.parse(a.lastSeen))),
    ),
    a.holding.length
      ? h('div', { class: 'holds' }, 'holds ', a.holding.map((s, i) => [i ? ', ' : '', h('b', {}, s.stepId), ` of ${short(s.planId)}`]), a.holdingHidden ? ` and ${plural(a.holdingHidden, 'more step')}` : null)
      : null,
  );
  return mark(card, `agent:${a.agent ?? ''}:${a.thread}`, `${a.status}:${a.unread}:${a.holding.map((s) => s.stepId).join(',')}`);
}

function renderMessage(m) {
  const named = m.recipients.map(recipientName).join(', ');
  const li = h('li', { class: 'message', dataset: { message: m.id } },
    h('div', { class: 'meta' },
      h('span', {}, h('b', {}, m.from), ' to ', h('b', {}, m.to)),
      named && named !== m.to ? h('span', { title: 'who it reached' }, `reached ${named}`) : null,
      m.awaiting ? h('span', { class: 'chip', title: 'kept until this recipient joins the roster' }, `awaiting ${m.awaiting}`) : null,
      m.replyTo ? h('span', { class: 'mono', title: `a reply to ${m.replyTo}` }, `re ${short(m.replyTo)}`) : null,
      time(Date.parse(m.sentAt)),
    ),
    h('div', { class: 'text' }, m.content, m.cut ? '…' : ''),
  );
  return mark(li, `message:${m.id}`, m.id);
}

/**
 * The team section: the roster (most recently seen first) and the messages (newest first), with what is not shown
 * counted. `team` is the board's `team` (absent: nobody on the roster and no messages).
 */
export function renderTeam(team) {
  const agentsHidden = team.rosterTotal - team.roster.length;
  const messages = [...team.messages].reverse();
  return [
    h('h3', { class: 'team-label', id: 'roster-title' }, `Roster · ${plural(team.rosterTotal, 'agent')}`),
    team.roster.length ? h('ul', { class: 'stack roster', 'aria-labelledby': 'roster-title' }, team.roster.map(renderAgent)) : empty('Nobody on the roster.'),
    agentsHidden > 0 ? empty(`${plural(agentsHidden, 'agent')} seen less recently not shown.`) : null,
    h('h3', { class: 'team-label', id: 'messages-title' }, 'Messages, newest first'),
    messages.length ? h('ol', { class: 'messages', 'aria-labelledby': 'messages-title' }, messages.map(renderMessage)) : empty('No messages kept.'),
    team.messagesHidden > 0 ? empty(`${plural(team.messagesHidden, 'earlier message')}${team.messagesHidden >= 1000 ? ' or more' : ''} not shown.`) : null,
  ].filter(Boolean);
}
