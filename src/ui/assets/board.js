// The board page: reads the namespace's board as JSON, renders it (render.js, shared with the MCP App), and re-reads
// what changed when the server says so.
import { clock, empty, h, marks, renderPlan, renderScope, renderThread, replace, sortThreads, summaryStats, tick } from './render.js';

const SECTIONS = ['scopes', 'plans', 'threads'];

const state = {
  namespace: undefined,
  defaultNamespace: '-',
  board: { revision: -1, scopes: [], plans: [], threads: [], truncated: [] },
  /** the store revision each section was read at */
  readAt: { scopes: -1, plans: -1, threads: -1 },
  events: undefined,
  retryMs: 1000,
  lastNamespaces: 0,
};

const $ = (id) => document.getElementById(id);
const nsLabel = (ns) => (ns === state.defaultNamespace ? '(default)' : ns);

function truncatedNote(section, what) {
  return state.board.truncated.includes(section) ? empty(`Showing the first ${what}; the store holds more.`) : null;
}

function render(sections) {
  const { plans = [], scopes = [] } = state.board;
  const threads = sortThreads(state.board.threads ?? []);
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
      ? [...scopes.map((s) => renderScope(s)), truncatedNote('scopes', 'keys')].filter(Boolean)
      : [empty('No keys in this namespace yet.')]);
  }
  $('summary').replaceChildren(...summaryStats(state.board));
  marks.first = false;
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
      if (typeof view.at === 'number') clock.skew = view.at - Date.now();
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
  marks.seen.clear();
  marks.first = true;
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
  marks.first = true;
  connect();
}

$('namespace').addEventListener('change', (e) => switchNamespace(e.target.value));
setInterval(tick, 5000);
void start();
