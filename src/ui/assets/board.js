// The board page: reads the namespace's board as JSON, renders it (render.js, shared with the MCP App), and re-reads
// what changed when the server says so. Its keys panel is board-keys.js.
import {
  clock, empty, h, marks, reconcile, replace, renderPlan, renderTeam, renderThread, renderTimeline, sortThreads, summaryStats, tick, untilLeaseEnds,
} from './render.js';
import { keysPanel } from './board-keys.js';

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
const { keys, load: loadKeys, patch: patchKeys } = keysPanel({
  api,
  namespace: () => state.namespace,
  read: (revision) => {
    state.readAt.scopes = revision;
  },
  counted: () => renderSummary(),
});
const nsLabel = (ns) => (ns === state.defaultNamespace ? '(default)' : ns);

function truncatedNote(section, what) {
  return state.board.truncated.includes(section) ? empty(`Showing the ${what}; the store holds more.`) : null;
}

function render(sections) {
  const { plans = [] } = state.board;
  const threads = sortThreads(state.board.threads ?? []);
  if (sections.includes('threads')) {
    $('threads-count').textContent = threads.length ? String(threads.length) : '';
    reconcile($('threads'), threads.length
      ? [...threads.map(renderThread), truncatedNote('threads', state.board.threadsTotal ? `${threads.length} most recently active of ${state.board.threadsTotal.toLocaleString()} threads (${(state.board.threadsTotal - threads.length).toLocaleString()} hidden)` : 'most recently active threads')].filter(Boolean)
      : [empty('No threads yet. A thread appears when an agent connects.')]);
  }
  if (sections.includes('plans')) {
    watchLeases(plans);
    $('plans-count').textContent = plans.length ? String(plans.length) : '';
    reconcile($('plans'), plans.length
      ? [...plans.map(renderPlan), truncatedNote('plans', `first ${plans.length} plans (active first)`)].filter(Boolean)
      : [empty('No plans. plan_create puts one here.')]);
  }
  if (sections.includes('plans') || sections.includes('threads')) {
    const { team } = state.board;
    $('team-panel').hidden = !team;
    $('team-count').textContent = team ? String(team.rosterTotal) : '';
    replace($('team'), team ? renderTeam(team) : []);
  }
  renderSummary();
  marks.first = false;
}

/** Reads the plans and threads again just after the first lease shown ends (see untilLeaseEnds). */
const leases = { timer: undefined };
function watchLeases(plans) {
  clearTimeout(leases.timer);
  const wait = untilLeaseEnds({ plans });
  if (wait !== Infinity) leases.timer = setTimeout(() => void refresh(['plans', 'threads']), Math.min(wait, 2 ** 31 - 1));
}

function renderSummary() {
  $('summary').replaceChildren(...summaryStats(state.board, { keys: keys.total, scopes: keys.scopes.length }));
}

// ---------- timeline: the recent changes, or one key's ----------

const changes = { only: undefined, timer: undefined, last: 0, generation: 0 };

async function loadTimeline() {
  const generation = ++changes.generation;
  changes.last = Date.now();
  const params = new URLSearchParams({ ns: state.namespace });
  if (changes.only) {
    params.set('scope', changes.only.scope);
    params.set('key', changes.only.key);
  }
  const { items } = await api(`/board/api/timeline?${params}`);
  if (generation !== changes.generation) return;
  reconcile($('timeline'), renderTimeline(items));
  $('timeline-for').textContent = changes.only ? `of ${changes.only.scope}/${changes.only.key}` : '';
  $('timeline-all').hidden = !changes.only;
}

/** Re-reads the timeline at most once a second, however fast the store changes. */
function timelineSoon() {
  if (changes.timer) return;
  const wait = Math.max(0, 1000 - (Date.now() - changes.last));
  changes.timer = setTimeout(() => {
    changes.timer = undefined;
    void loadTimeline().catch(() => {});
  }, wait);
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
      // keys are read a page at a time (loadKeys); the other sections whole
      if (asked.includes('scopes')) await loadKeys();
      const others = asked.filter((s) => s !== 'scopes');
      if (others.length === 0) continue;
      const view = await api(`/board/api/board?ns=${encodeURIComponent(ns)}&sections=${others.join(',')}`);
      if (ns !== state.namespace) continue;
      const truncated = state.board.truncated.filter((s) => !asked.includes(s)).concat(view.truncated);
      // a namespace with nobody on its roster and no messages has no team (any read of plans or threads says so)
      state.board = { ...state.board, ...view, truncated, team: view.team };
      if (typeof view.at === 'number') clock.skew = view.at - Date.now();
      for (const s of others) state.readAt[s] = view.revision;
      render(others);
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
    timelineSoon();
  });
  es.addEventListener('change', (e) => {
    const data = JSON.parse(e.data);
    // changed keys come with the event: patched in place, nothing re-read
    if (Array.isArray(data.keys)) patchKeys(data.keys);
    timelineSoon();
    const sections = (data.sections ?? SECTIONS).filter((s) => s !== 'scopes' || !Array.isArray(data.keys));
    const stale = sections.filter((s) => data.revision === null || data.revision > state.readAt[s]);
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
  keys.rows = [];
  keys.q = $('key-search').value = '';
  keys.scope = '';
  changes.only = undefined;
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
let searchTimer;
$('key-search').addEventListener('input', (e) => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    keys.q = e.target.value.trim();
    void loadKeys().catch((error) => setConn('unavailable', error.message));
  }, 150);
});
$('key-scope').addEventListener('change', (e) => {
  keys.scope = e.target.value;
  void loadKeys().catch((error) => setConn('unavailable', error.message));
});
$('scopes').addEventListener('click', (e) => {
  const button = e.target.closest('button.key-name');
  if (!button) return;
  changes.only = { scope: button.dataset.scope, key: button.dataset.key };
  void loadTimeline().catch(() => {});
  $('timeline-panel').scrollIntoView({ block: 'nearest' });
});
$('timeline-all').addEventListener('click', () => {
  changes.only = undefined;
  void loadTimeline().catch(() => {});
});
$('keys-more').addEventListener('click', () => void loadKeys(true).catch((error) => setConn('unavailable', error.message)));
setInterval(tick, 5000);
void start();
