// The board page: reads the namespace's board as JSON, renders it, and re-reads what changed when the server says so.
// Plain DOM, no framework: every text goes through textContent, never innerHTML.

const SECTIONS = ['scopes', 'plans', 'threads'];
const STEP_ICONS = { pending: '○', in_progress: '◐', completed: '✓', blocked: '■', skipped: '–' };
const SIGNAL_ICONS = { commit: '●', explore: '◆', uncertain: '▲' };
const HISTORY_VISIBLE = 5;

const state = {
  namespace: undefined,
  defaultNamespace: '-',
  board: { revision: -1, scopes: [], plans: [], threads: [], truncated: [] },
  /** the store revision each section was read at */
  readAt: { scopes: -1, plans: -1, threads: -1 },
  /** what was rendered last, by item, to mark what changed */
  seen: new Map(),
  firstRender: true,
  events: undefined,
  retryMs: 1000,
  lastNamespaces: 0,
};

const $ = (id) => document.getElementById(id);

/** h('div', {class: 'x'}, child, 'text', …): a DOM element; attributes starting with "on" are listeners. */
function h(tag, attrs, ...children) {
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

function ago(ms) {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 0) return 'just now';
  if (s < 5) return 'just now';
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
function until(ms) {
  const s = Math.round((ms - Date.now()) / 1000);
  if (s <= 0) return 'expiring';
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  if (s < 86400) return `in ${Math.floor(s / 3600)}h`;
  return `in ${Math.floor(s / 86400)}d`;
}
/** A time that keeps itself current (see tick()). */
function time(ms, kind = 'ago') {
  const iso = new Date(ms).toISOString();
  return h('time', { datetime: iso, title: new Date(ms).toLocaleString(), dataset: { at: String(ms), kind } }, kind === 'ago' ? ago(ms) : until(ms));
}
function tick() {
  for (const el of document.querySelectorAll('time[data-at]')) {
    const at = Number(el.dataset.at);
    el.textContent = el.dataset.kind === 'ago' ? ago(at) : until(at);
  }
}

const short = (id) => (id && id.length > 14 ? `${id.slice(0, 8)}…` : id);
const nsLabel = (ns) => (ns === state.defaultNamespace ? '(default)' : ns);

// ---------- fresh marks ----------

/** Marks `el` as changed when `stamp` differs from what was last rendered for `key`. */
function mark(el, key, stamp) {
  const before = state.seen.get(key);
  state.seen.set(key, stamp);
  if (!state.firstRender && before !== stamp) el.classList.add('fresh');
  return el;
}

// ---------- rendering ----------

function empty(text) {
  return h('div', { class: 'empty' }, text);
}

function renderSummary() {
  const { threads = [], plans = [], scopes = [] } = state.board;
  const byState = (s) => threads.filter((t) => t.state === s).length;
  const active = plans.filter((p) => p.status === 'active');
  const steps = active.flatMap((p) => p.steps);
  const done = steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
  const keys = scopes.reduce((n, s) => n + s.keys.length, 0);
  const stat = (href, value, label) => h('a', { class: 'stat', href }, h('b', {}, value), h('span', {}, label));
  $('summary').replaceChildren(
    stat('#threads-panel', byState('running'), `running of ${threads.length} thread${threads.length === 1 ? '' : 's'}`),
    stat('#threads-panel', byState('finished'), 'finished'),
    stat('#plans-panel', steps.length ? `${done}/${steps.length}` : active.length, steps.length ? `steps done in ${active.length} active plan${active.length === 1 ? '' : 's'}` : 'active plans'),
    stat('#keys-panel', keys, `keys in ${scopes.length} scope${scopes.length === 1 ? '' : 's'}`),
  );
}

function bar(current, max) {
  const ratio = max > 0 ? Math.min(1, current / max) : 1;
  const cls = current >= max ? 'bar full' : ratio >= 0.8 ? 'bar warn' : 'bar';
  return h('div', { class: cls, role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': max, 'aria-valuenow': current },
    h('i', { dataset: { w: String(Math.round(ratio * 100)) } }));
}

function renderBudgets(budgets) {
  if (!budgets.length) return null;
  return h('div', { class: 'budgets' }, budgets.map((b) =>
    h('div', { class: 'budget' },
      h('div', { class: 'label' }, h('span', {}, b.name), h('b', {}, b.max !== undefined ? `${b.current} / ${b.max}` : String(b.current))),
      b.max !== undefined ? bar(b.current, b.max) : null,
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

function renderThread(t) {
  const newestFirst = [...t.history].reverse();
  const lastSignal = newestFirst.find((e) => e.kind === 'signal');
  const answerIsCurrent = t.finalAnswer && (!t.run || t.finalAnswer.run === t.run);
  const card = h('article', { class: 'card thread', dataset: { thread: t.thread } },
    h('div', { class: 'card-head' },
      h('div', { class: 'card-title' },
        h('span', { class: `badge s-${t.state}` }, t.state.replaceAll('_', ' ')),
        h('h3', { class: 'mono', title: t.thread }, t.thread),
      ),
      lastSignal ? h('span', { class: `signal sig-${lastSignal.content}`, title: signalText(lastSignal) }, `${SIGNAL_ICONS[lastSignal.content] ?? '•'} ${lastSignal.content}`) : null,
    ),
    h('div', { class: 'meta' },
      t.agent ? h('span', {}, 'agent ', h('b', {}, t.agent)) : null,
      t.run ? h('span', { title: t.run }, 'run ', h('span', { class: 'mono' }, short(t.run)), t.runs > 1 ? ` (${t.runs} runs)` : '') : null,
      t.parent ? h('span', {}, 'child of ', h('span', { class: 'mono' }, short(t.parent))) : null,
      t.lastActivity ? h('span', {}, 'active ', time(t.lastActivity)) : null,
    ),
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
                h('summary', {}, `${newestFirst.length - HISTORY_VISIBLE} earlier event${newestFirst.length - HISTORY_VISIBLE === 1 ? '' : 's'}`),
                h('ol', { class: 'events' }, newestFirst.slice(HISTORY_VISIBLE).map(renderEvent)))
            : null,
        )
      : null,
  );
  return mark(card, `thread:${t.thread}`, `${t.lastActivity}:${t.state}:${t.lastSeq}`);
}

function renderStep(plan, step) {
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const waiting = (step.blockedBy ?? []).filter((id) => !['completed', 'skipped'].includes(byId.get(id)?.status));
  const li = h('li', { class: `step st-${step.status}` },
    h('span', { class: 'icon', title: step.status.replaceAll('_', ' ') }, STEP_ICONS[step.status] ?? '•'),
    h('span', { class: 'sid' }, step.id),
    h('span', { class: 'content' }, step.content),
    h('span', { class: 'side' },
      step.owner ? h('span', { class: 'chip owner', title: step.claim ? `claim ${step.claim.fence}, lease until ${new Date(step.claim.leaseUntil).toLocaleTimeString()}` : '' }, step.owner) : null,
      step.attempts ? h('span', { class: 'chip', title: 'claims that lapsed' }, `${step.attempts} lapsed`) : null),
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

function renderPlan(p) {
  const done = p.steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
  const card = h('article', { class: 'card plan', dataset: { plan: p.planId } },
    h('div', { class: 'card-head' },
      h('div', { class: 'card-title' }, h('h3', {}, p.title)),
      h('div', { class: 'card-title' },
        h('span', { class: 'progress' }, `${done}/${p.steps.length}`, bar(done, Math.max(1, p.steps.length))),
        h('span', { class: `badge s-${p.status}` }, p.status)),
    ),
    h('div', { class: 'meta' },
      h('span', { class: 'mono' }, p.planId),
      h('span', {}, 'scope ', h('span', { class: 'mono' }, p.scope)),
      h('span', {}, `v${p.version} · ${p.updatedBy} `, time(p.updatedAt)),
      p.expiresAt ? h('span', { class: 'expires' }, 'expires ', time(p.expiresAt, 'until')) : null,
    ),
    p.steps.length ? h('ol', { class: 'steps' }, p.steps.map((s) => renderStep(p, s))) : h('p', { class: 'note' }, 'No steps.'),
  );
  // The card flashes only for plan-level changes; steps flash on their own.
  return mark(card, `plan:${p.planId}`, `${p.title}:${p.status}:${p.steps.length}`);
}

function renderValue(k) {
  const oneLine = !k.value.includes('\n') && k.value.length <= 120 && !k.cut;
  if (oneLine) return h('span', { class: 'value-inline' }, k.value);
  const preview = k.value.replace(/\s+/g, ' ').slice(0, 140);
  return h('details', { class: 'fold', dataset: { fold: `value:${k.scope}:${k.key}` } },
    h('summary', {}, h('span', { class: 'preview' }, preview), h('span', { class: 'size' }, `${k.size.toLocaleString()} chars`)),
    h('pre', { class: 'value' }, k.value, k.cut ? `\n… (${(k.size - k.value.length).toLocaleString()} more characters)` : ''),
  );
}

function renderScope(s) {
  return h('article', { class: 'card scope', dataset: { scope: s.scope } },
    h('div', { class: 'scope-head' }, h('h3', {}, s.scope), h('span', { class: 'count' }, `${s.keys.length} key${s.keys.length === 1 ? '' : 's'}`)),
    h('table', { class: 'keys' },
      h('thead', {}, h('tr', {}, h('th', { class: 'k' }, 'Key'), h('th', { class: 'v' }, 'Value'), h('th', { class: 'n' }, 'Ver'), h('th', { class: 'by' }, 'By'), h('th', { class: 't' }, 'Updated'))),
      h('tbody', {}, s.keys.map((k) => mark(
        h('tr', { dataset: { key: k.key } },
          h('td', { class: 'k' }, k.key),
          h('td', { class: 'v' }, renderValue({ ...k, scope: s.scope }), k.expiresAt ? h('div', { class: 'note expires' }, 'expires ', time(k.expiresAt, 'until')) : null),
          h('td', { class: 'n', title: 'version' }, k.version),
          h('td', { class: 'by' }, k.updatedBy),
          h('td', { class: 't' }, time(k.updatedAt)),
        ),
        `key:${s.scope}:${k.key}`, String(k.version) + ':' + k.updatedAt))),
    ),
  );
}

/** Replaces a section's content, keeping open folds open. */
function replace(container, nodes) {
  const open = new Set([...container.querySelectorAll('details[open]')].map((d) => d.dataset.fold));
  container.replaceChildren(...nodes);
  for (const d of container.querySelectorAll('details[data-fold]')) if (open.has(d.dataset.fold)) d.open = true;
  for (const el of container.querySelectorAll('.bar > i[data-w]')) el.style.width = `${el.dataset.w}%`;
}

function truncatedNote(section, what) {
  return state.board.truncated.includes(section) ? h('p', { class: 'note' }, `Showing the first ${what}; the store holds more.`) : null;
}

/** Threads that need a person first, then working ones, then the ones that are done; the most recent first within each. */
const STATE_ORDER = ['awaiting_user_input', 'error', 'running', 'paused', 'loading', 'finished', 'stopped'];
const rank = (t) => (STATE_ORDER.includes(t.state) ? STATE_ORDER.indexOf(t.state) : STATE_ORDER.length);

function render(sections) {
  const { plans = [], scopes = [] } = state.board;
  const threads = [...(state.board.threads ?? [])].sort((a, b) => rank(a) - rank(b) || b.lastActivity - a.lastActivity);
  if (sections.includes('threads')) {
    $('threads-count').textContent = threads.length ? String(threads.length) : '';
    replace($('threads'), threads.length
      ? [...threads.map(renderThread), truncatedNote('threads', 'most recently active threads')].filter(Boolean)
      : [empty('No threads yet. A thread appears when an agent connects.')]);
  }
  if (sections.includes('plans')) {
    $('plans-count').textContent = plans.length ? String(plans.length) : '';
    replace($('plans'), plans.length
      ? [...plans.map(renderPlan), truncatedNote('plans', 'plans')].filter(Boolean)
      : [empty('No plans. plan_create puts one here.')]);
  }
  if (sections.includes('scopes')) {
    const total = scopes.reduce((n, s) => n + s.keys.length, 0);
    $('keys-count').textContent = total ? String(total) : '';
    replace($('scopes'), scopes.length
      ? [...scopes.map(renderScope), truncatedNote('scopes', 'keys')].filter(Boolean)
      : [empty('No keys in this namespace yet.')]);
  }
  renderSummary();
  state.firstRender = false;
}

// ---------- data ----------

let inflight = false;
const pending = new Set();

async function api(path) {
  const res = await fetch(path, { headers: { accept: 'application/json' }, cache: 'no-store' });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const error = new Error(body?.error?.message ?? `HTTP ${res.status}`);
    error.status = res.status;
    throw error;
  }
  return body;
}

/** Re-reads the given sections; calls that arrive meanwhile are merged into one more read. */
async function refresh(sections) {
  for (const s of sections) pending.add(s);
  if (inflight) return;
  inflight = true;
  try {
    while (pending.size) {
      const asked = SECTIONS.filter((s) => pending.has(s));
      pending.clear();
      const ns = state.namespace;
      const view = await api(`/board/api/board?ns=${encodeURIComponent(ns)}&sections=${asked.join(',')}`);
      if (ns !== state.namespace) continue;
      const truncated = state.board.truncated.filter((s) => !asked.includes(s)).concat(view.truncated);
      state.board = { ...state.board, ...view, truncated };
      for (const s of asked) state.readAt[s] = view.revision;
      render(asked);
      if ($('conn').dataset.state === 'unavailable' && state.events?.readyState === EventSource.OPEN) setConn('live');
    }
  } catch (error) {
    const denied = error.status === 401 || error.status === 403;
    setConn(denied ? 'denied' : 'unavailable', error.message);
    // A store that went away is read again until it is back; the stream says when something changes after that.
    if (!denied) setTimeout(() => void refresh(SECTIONS), 3000);
  } finally {
    inflight = false;
  }
}

async function loadNamespaces() {
  const meta = await api('/board/api/namespaces');
  state.defaultNamespace = meta.defaultNamespace;
  state.lastNamespaces = Date.now();
  if (meta.store) $('store').textContent = `${meta.store}${meta.version ? ` · v${meta.version}` : ''}`;
  const fromUrl = new URLSearchParams(location.search).get('ns');
  if (state.namespace === undefined) state.namespace = fromUrl && meta.namespaces.includes(fromUrl) ? fromUrl : meta.initial;
  const names = meta.namespaces.includes(state.namespace) ? meta.namespaces : [state.namespace, ...meta.namespaces];
  const select = $('namespace');
  select.replaceChildren(...names.map((ns) => h('option', { value: ns, selected: ns === state.namespace }, nsLabel(ns))));
  $('picker').hidden = names.length < 2;
  document.title = `${nsLabel(state.namespace)} · mcp-blackboard`;
}

// ---------- live ----------

function setConn(kind, detail) {
  const texts = {
    connecting: 'Connecting…',
    live: 'Live',
    reconnecting: 'Disconnected — reconnecting…',
    unavailable: 'Store unavailable',
    denied: 'Not allowed — reopen with ?token=',
  };
  $('conn').dataset.state = kind;
  $('conn-text').textContent = texts[kind];
  $('conn').title = detail ?? '';
  if (state.board.revision >= 0 && kind === 'live') $('conn').title = `revision ${state.board.revision}`;
}

function connect() {
  state.events?.close();
  const es = new EventSource(`/board/api/events?ns=${encodeURIComponent(state.namespace)}`);
  state.events = es;
  es.addEventListener('hello', (e) => {
    const data = JSON.parse(e.data);
    state.retryMs = 1000;
    setConn(data.ok ? 'live' : 'unavailable', data.message);
    // After a (re)connect, read everything: changes made while away are not replayed.
    void refresh(SECTIONS);
  });
  es.addEventListener('change', (e) => {
    const data = JSON.parse(e.data);
    const stale = (data.sections ?? SECTIONS).filter((s) => data.revision === null || data.revision > state.readAt[s]);
    if (stale.length) void refresh(stale);
    if (Date.now() - state.lastNamespaces > 5000) void loadNamespaces().catch(() => {});
  });
  es.onerror = () => {
    if (es !== state.events) return;
    setConn('reconnecting');
    // The browser retries by itself while the stream is merely interrupted; a refused stream is retried here.
    if (es.readyState === EventSource.CLOSED) {
      setTimeout(() => { if (es === state.events) connect(); }, state.retryMs);
      state.retryMs = Math.min(state.retryMs * 2, 15000);
    }
  };
}

function switchNamespace(ns) {
  state.namespace = ns;
  state.board = { revision: -1, scopes: [], plans: [], threads: [], truncated: [] };
  state.readAt = { scopes: -1, plans: -1, threads: -1 };
  state.seen.clear();
  state.firstRender = true;
  const url = new URL(location.href);
  url.searchParams.set('ns', ns);
  history.replaceState(null, '', url);
  document.title = `${nsLabel(ns)} · mcp-blackboard`;
  setConn('connecting');
  connect();
}

async function start() {
  try {
    await loadNamespaces();
  } catch (error) {
    setConn(error.status === 401 || error.status === 403 ? 'denied' : 'unavailable', error.message);
    setTimeout(start, 3000);
    return;
  }
  render(SECTIONS);
  state.firstRender = true;
  connect();
}

$('namespace').addEventListener('change', (e) => switchNamespace(e.target.value));
setInterval(tick, 5000);
void start();
