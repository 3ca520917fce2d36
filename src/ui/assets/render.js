// The board's renderer, shared by the web page (board.js) and the MCP App (app.js): board JSON in, DOM out.
// Plain DOM, no framework: every text goes through textContent, never innerHTML.

const STEP_ICONS = { pending: '○', in_progress: '◐', completed: '✓', blocked: '■', skipped: '–' };
const SIGNAL_ICONS = { commit: '●', explore: '◆', uncertain: '▲' };
const HISTORY_VISIBLE = 5;

/** What was rendered last, by item, to mark what changed; nothing is marked on the first render. */
export const marks = { seen: new Map(), first: true };

/** h('div', {class: 'x'}, child, 'text', …): a DOM element; attributes starting with "on" are listeners. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === false || value === null) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// ---------- time ----------

/** The server's clock minus this page's: leases and ages are shown against the server's clock. */
export const clock = { skew: 0 };
const now = () => Date.now() + clock.skew;

function ago(ms) {
  const s = Math.round((now() - ms) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
function until(ms) {
  const s = Math.round((ms - now()) / 1000);
  if (s <= 0) return 'now';
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  if (s < 86400) return `in ${Math.floor(s / 3600)}h`;
  return `in ${Math.floor(s / 86400)}d`;
}
/** A time that keeps itself current (see tick()). */
export function time(ms, kind = 'ago') {
  const iso = new Date(ms).toISOString();
  return h('time', { datetime: iso, title: new Date(ms).toLocaleString(), dataset: { at: String(ms), kind } }, kind === 'ago' ? ago(ms) : until(ms));
}
export function tick(root = document) {
  for (const el of root.querySelectorAll('time[data-at]')) {
    const at = Number(el.dataset.at);
    const text = el.dataset.kind === 'ago' ? ago(at) : until(at);
    if (el.textContent !== text) el.textContent = text;
  }
}

/**
 * Milliseconds until just after the first lease shown ends (a step's claim, or a step a thread holds), or Infinity when
 * none is shown. A lapse writes nothing, so no change tells of it: a page reads the board again then, and the server
 * shows the step lapsed or the lease its holder renewed meanwhile. Leases already past count for nothing, so a board
 * that still shows one is not read again at once, and again.
 */
export function untilLeaseEnds({ plans = [], threads = [] }) {
  const at = now();
  let first = Infinity;
  for (const plan of plans) for (const step of plan.steps ?? []) if (step.claim?.leaseUntil > at) first = Math.min(first, step.claim.leaseUntil);
  for (const thread of threads) for (const held of thread.holds ?? []) if (held.leaseUntil > at) first = Math.min(first, held.leaseUntil);
  return first === Infinity ? Infinity : Math.ceil(first - at) + 500;
}

export const short = (id) => (id && id.length > 14 ? `${id.slice(0, 8)}…` : id);
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The element id of a thread's card, and a link to it. */
export const threadAnchor = (thread) => `thread-${thread}`;
const threadLink = (thread, ...children) => h('a', { class: 'tlink', href: `#${encodeURIComponent(threadAnchor(thread))}` }, ...children);

/** Marks `el` as changed when `stamp` differs from what was last rendered for `key`. */
export function mark(el, key, stamp) {
  const before = marks.seen.get(key);
  marks.seen.set(key, stamp);
  if (!marks.first && before !== stamp) el.classList.add('fresh');
  return el;
}

export function empty(text) {
  return h('div', { class: 'empty' }, text);
}

// ---------- summary ----------

const isDone = (s) => s.status === 'completed' || s.status === 'skipped';
/** A plan's steps done and in all (a board that left some steps out says how many it has). */
const stepTotals = (p) => p.stepCounts ?? { done: p.steps.filter(isDone).length, total: p.steps.length };
/** A plan whose steps are all done is complete, whatever its status says. */
export const planComplete = (p) => {
  const { done, total } = stepTotals(p);
  return p.status === 'completed' || (total > 0 && done === total);
};

/** The summary line: what the threads are doing, the plans' progress, the keys. */
export function summaryStats(board, keyCounts) {
  const { threads = [], plans = [], scopes = [], hidden } = board;
  const by = (a) => threads.filter((t) => (t.activity ?? t.state) === a).length;
  const open = plans.filter((p) => !planComplete(p) && p.status === 'active');
  const steps = open.map(stepTotals).reduce((sum, t) => ({ done: sum.done + t.done, total: sum.total + t.total }), { done: 0, total: 0 });
  const keys = keyCounts?.keys ?? scopes.reduce((n, s) => n + s.keys.length, 0) + (hidden?.keys ?? 0);
  const scopeCount = keyCounts?.scopes ?? scopes.length;
  const stat = (href, value, label, cls = '') => h('a', { class: `stat ${cls}`, href }, h('b', {}, value), h('span', {}, label));
  const needs = by('needs input');
  return [
    stat('#threads-panel', by('working'), `working of ${plural(threads.length, 'thread')}`),
    needs ? stat('#threads-panel', needs, 'need a person', 'alert') : null,
    stat('#threads-panel', by('done'), 'done'),
    stat('#plans-panel', `${plans.filter(planComplete).length}/${plans.length}`, 'plans complete'),
    steps.total ? stat('#plans-panel', `${steps.done}/${steps.total}`, `steps done in ${plural(open.length, 'open plan')}`) : null,
    stat('#keys-panel', keys, `keys in ${plural(scopeCount, 'scope')}`),
  ].filter(Boolean);
}

// ---------- bars ----------

/** A meter with its accessible name; `kind` 'progress' turns green when full, 'budget' red at the limit. */
export function bar(current, max, label, kind = 'budget') {
  const ratio = max > 0 ? Math.min(1, current / max) : 1;
  const cls = kind === 'progress' ? (current >= max ? 'bar done' : 'bar') : current >= max ? 'bar full' : ratio >= 0.8 ? 'bar warn' : 'bar';
  const fill = h('i', {});
  // set through the CSSOM: the page's content security policy allows no inline style attributes
  fill.style.width = `${Math.round(ratio * 100)}%`;
  return h('div', { class: cls, role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': max, 'aria-valuenow': current, 'aria-valuetext': `${current} of ${max}` }, fill);
}

function renderBudgets(budgets) {
  if (!budgets.length) return null;
  return h('div', { class: 'budgets' }, budgets.map((b) =>
    h('div', { class: 'budget' },
      h('div', { class: 'label' }, h('span', {}, b.name), h('b', {}, b.max !== undefined ? `${b.current} / ${b.max}` : String(b.current))),
      b.max !== undefined ? bar(b.current, b.max, `budget ${b.name}: ${b.current} of ${b.max}`) : null,
    )));
}

// ---------- threads ----------

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

// ---------- plans ----------

function renderClaim(step) {
  const c = step.claim;
  if (!c) return step.owner ? h('span', { class: 'chip owner' }, step.owner) : null;
  const live = c.leaseUntil > now();
  return h('span', { class: `claim${live ? '' : ' lapsed'}` },
    threadLink(c.thread, h('span', { class: 'chip owner', title: `held by thread ${c.thread}, claim ${c.fence}` }, step.owner ?? short(c.thread))),
    h('span', { class: 'lease' }, live ? ['lease ends ', time(c.leaseUntil, 'until')] : 'lease lapsed'),
  );
}

function renderStep(plan, step) {
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  // a blocker a small board left out was most likely finished (finished steps are left out first)
  const waiting = (step.blockedBy ?? []).filter((id) => (byId.has(id) ? !isDone(byId.get(id)) : !plan.stepCounts));
  const li = h('li', { class: `step st-${step.status}`, dataset: { step: step.id } },
    h('span', { class: 'icon', title: step.status.replaceAll('_', ' '), role: 'img', 'aria-label': step.status.replaceAll('_', ' ') }, STEP_ICONS[step.status] ?? '•'),
    h('span', { class: 'sid' }, step.id),
    h('span', { class: 'content' }, step.content),
    h('span', { class: 'side' },
      renderClaim(step),
      step.attempts ? h('span', { class: 'chip attempts', title: 'claims on this step that lapsed' }, `${plural(step.attempts, 'lapsed claim')}`) : null),
    step.blockedBy?.length || step.note
      ? h('div', { class: 'extra' },
          step.blockedBy?.length
            ? h('span', { class: waiting.length ? 'blocked' : '' }, waiting.length ? `waits for ${waiting.join(', ')}` : `after ${step.blockedBy.join(', ')}`)
            : null,
          step.blockedBy?.length && step.note ? ' · ' : null,
          step.note ? h('span', {}, step.note) : null)
      : null,
  );
  return mark(li, `step:${plan.planId}:${step.id}`, `${step.status}:${step.owner ?? ''}:${step.note ?? ''}:${step.attempts ?? 0}:${step.claim?.leaseUntil ?? ''}`);
}

export function renderPlan(p) {
  const { done, total } = stepTotals(p);
  const complete = planComplete(p);
  const left = total - p.steps.length;
  const status = complete ? 'complete' : p.status;
  const card = h('article', { class: `card plan${complete ? ' complete' : ''}`, dataset: { plan: p.planId } },
    h('div', { class: 'card-head' },
      h('div', { class: 'card-title' }, h('h3', {}, p.title)),
      h('div', { class: 'card-title' },
        h('span', { class: 'progress' }, `${done}/${total}`, bar(done, Math.max(1, total), `${p.title}: ${done} of ${total} steps done`, 'progress')),
        h('span', { class: `badge p-${status}` }, status)),
    ),
    h('div', { class: 'meta' },
      h('span', { class: 'mono' }, p.planId),
      h('span', {}, 'scope ', h('span', { class: 'mono' }, p.scope)),
      h('span', {}, `v${p.version} · ${p.updatedBy} `, time(p.updatedAt)),
      p.expiresAt ? h('span', { class: 'expires' }, 'expires ', time(p.expiresAt, 'until')) : null,
    ),
    p.steps.length ? h('ol', { class: 'steps' }, p.steps.map((s) => renderStep(p, s))) : left ? null : h('p', { class: 'note' }, 'No steps.'),
    left > 0 ? h('p', { class: 'note' }, `${plural(left, 'more step')} not shown here; plan_get lists them all.`) : null,
  );
  // The card flashes only for plan-level changes; steps flash on their own.
  return keyed(mark(card, `plan:${p.planId}`, `${p.title}:${status}:${total}`), `plan:${p.planId}`, p);
}

// ---------- keys ----------

function renderValue(k, scope) {
  const oneLine = !k.value.includes('\n') && k.value.length <= 120 && !k.cut;
  if (oneLine) return h('span', { class: 'value-inline' }, k.value);
  const preview = k.value.replace(/\s+/g, ' ').slice(0, 140);
  return h('details', { class: 'fold', dataset: { fold: `value:${scope}:${k.key}` } },
    h('summary', {}, h('span', { class: 'preview' }, preview), h('span', { class: 'size' }, `${k.size.toLocaleString()} chars`)),
    h('pre', { class: 'value' }, k.value, k.cut ? `\n… (${(k.size - k.value.length).toLocaleString()} more characters)` : ''),
  );
}

export function renderKeyRow(scope, k) {
  return mark(
    h('tr', { dataset: { key: k.key } },
      h('td', { class: 'k' }, h('button', { type: 'button', class: 'key-name', title: 'Show this key\'s changes', dataset: { scope, key: k.key } }, k.key)),
      h('td', { class: 'v' }, renderValue(k, scope), k.expiresAt ? h('div', { class: 'note expires' }, 'expires ', time(k.expiresAt, 'until')) : null),
      h('td', { class: 'n', title: 'version' }, k.version),
      h('td', { class: 'by' }, k.updatedBy),
      h('td', { class: 't' }, time(k.updatedAt)),
    ),
    `key:${scope}:${k.key}`, `${k.version}:${k.updatedAt}`);
}

/** A scope's card; `total` (when more keys exist than `keys`) is said in its count. */
export function renderScope(s, total = s.keys.length) {
  return h('article', { class: 'card scope', dataset: { scope: s.scope } },
    h('div', { class: 'scope-head' }, h('h3', {}, s.scope), h('span', { class: 'count' }, total > s.keys.length ? `${s.keys.length} of ${plural(total, 'key')}` : plural(s.keys.length, 'key'))),
    h('table', { class: 'keys' },
      h('thead', {}, h('tr', {}, h('th', { class: 'k' }, 'Key'), h('th', { class: 'v' }, 'Value'), h('th', { class: 'n' }, 'Ver'), h('th', { class: 'by' }, 'By'), h('th', { class: 't' }, 'Updated'))),
      h('tbody', {}, s.keys.map((k) => renderKeyRow(s.scope, k))),
    ),
  );
}

/** Names a rendered item and what it was rendered from, so that {@link reconcile} keeps it while that is unchanged. */
function keyed(el, key, data) {
  el.dataset.k = key;
  el.dataset.stamp = JSON.stringify(data);
  return el;
}

/**
 * Makes a container hold `nodes`, keeping in place every child whose item is unchanged (same key, same data): focus,
 * text selection and open folds there survive a live update. A replaced item keeps its open folds.
 */
export function reconcile(container, nodes) {
  const old = new Map();
  for (const child of container.children) if (child.dataset.k) old.set(child.dataset.k, child);
  const wanted = nodes.map((node) => {
    const before = node.dataset?.k ? old.get(node.dataset.k) : undefined;
    if (!before) return node;
    if (before.dataset.stamp === node.dataset.stamp) return before;
    const open = new Set([...before.querySelectorAll('details[open]')].map((d) => d.dataset.fold));
    for (const d of node.querySelectorAll('details[data-fold]')) if (open.has(d.dataset.fold)) d.open = true;
    return node;
  });
  let i = 0;
  for (const node of wanted) {
    const at = container.children[i];
    if (at !== node) container.insertBefore(node, at ?? null);
    i++;
  }
  while (container.children.length > wanted.length) container.lastElementChild.remove();
}

/** Replaces a container's content, keeping open folds open. */
export function replace(container, nodes) {
  const open = new Set([...container.querySelectorAll('details[open]')].map((d) => d.dataset.fold));
  container.replaceChildren(...nodes);
  for (const d of container.querySelectorAll('details[data-fold]')) if (open.has(d.dataset.fold)) d.open = true;
}

// ---------- timeline ----------

/** The recent changes, newest first: what, which version, who, when. */
export function renderTimeline(items) {
  if (!items.length) return [empty('No changes kept yet.')];
  return items.map((c) => keyed(
    h('li', { class: `change c-${c.kind}` },
      h('span', { class: 'rev', title: 'revision' }, `r${c.revision}`),
      h('span', { class: 'what' }, c.what, h('span', { class: 'ver' }, c.deleted ? ' deleted' : ` v${c.version}`)),
      h('span', { class: 'when' }, c.by ? [`${c.by} · `, time(c.at)] : 'since replaced'),
    ),
    `change:${c.revision}:${c.what}`, c));
}

// ---------- team ----------

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
