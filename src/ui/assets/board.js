// The board page: reads the namespace's board as JSON, renders it (render.js, shared with the MCP App), and re-reads
// what changed when the server says so.
import {
  clock, empty, h, marks, reconcile, renderKeyRow, replace, renderPlan, renderScope, renderTeam, renderThread, renderTimeline, sortThreads, summaryStats, tick, untilLeaseEnds,
} from './render.js';

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

// ---------- keys: a page at a time, searched on the server, patched live ----------

const PAGE = 100;
const keys = { q: '', scope: '', rows: [], matched: 0, total: 0, scopes: [], truncated: false, generation: 0 };
const rowId = (scope, key) => `${scope}\u0000${key}`;
const words = () => keys.q.toLowerCase().split(/\s+/).filter(Boolean);
const matchesQuery = (k) => (!keys.scope || k.scope === keys.scope) && words().every((w) => `${k.scope}\n${k.key}\n${k.value}`.toLowerCase().includes(w));

/** Reads the first page of keys for the search (or the next page, appended). */
async function loadKeys(append = false) {
  const generation = ++keys.generation;
  const params = new URLSearchParams({ ns: state.namespace, offset: String(append ? keys.rows.length : 0), limit: String(PAGE) });
  if (keys.q) params.set('q', keys.q);
  if (keys.scope) params.set('scope', keys.scope);
  const page = await api(`/board/api/keys?${params}`);
  if (generation !== keys.generation) return;
  keys.rows = append ? keys.rows.concat(page.keys) : page.keys;
  Object.assign(keys, { matched: page.matched, total: page.total, scopes: page.scopes, truncated: page.truncated });
  state.readAt.scopes = page.revision;
  renderKeys();
}

/** The scope cards of the loaded rows (an unchanged card stays in place). */
function renderKeys() {
  const groups = new Map();
  for (const k of keys.rows) {
    if (!groups.has(k.scope)) groups.set(k.scope, []);
    groups.get(k.scope).push(k);
  }
  const counts = new Map(keys.scopes.map((s) => [s.scope, s.keys]));
  const cards = [...groups].map(([scope, rows]) => {
    const card = renderScope({ scope, keys: rows }, keys.q ? rows.length : (counts.get(scope) ?? rows.length));
    card.dataset.k = `scope:${scope}`;
    card.dataset.stamp = JSON.stringify([counts.get(scope), rows]);
    return card;
  });
  reconcile($('scopes'), cards.length ? cards : [empty(keys.q || keys.scope ? 'No key matches.' : 'No keys in this namespace yet.')]);
  renderKeyCounts();
}

function renderKeyCounts() {
  $('keys-count').textContent = keys.total ? keys.total.toLocaleString() : '';
  const hidden = keys.matched - keys.rows.length;
  const what = keys.q || keys.scope ? `matching key${keys.matched === 1 ? '' : 's'}` : `key${keys.matched === 1 ? '' : 's'}`;
  $('keys-shown').textContent = keys.total
    ? `Showing ${keys.rows.length.toLocaleString()} of ${keys.matched.toLocaleString()} ${what}${hidden > 0 ? ` (${hidden.toLocaleString()} hidden)` : ''} · ${keys.total.toLocaleString()} keys in ${keys.scopes.length} scope${keys.scopes.length === 1 ? '' : 's'}${keys.truncated ? ' (the store holds more than were searched)' : ''}`
    : '';
  const more = $('keys-more');
  more.hidden = hidden <= 0;
  more.textContent = `Show ${Math.min(PAGE, hidden).toLocaleString()} more (${hidden.toLocaleString()} hidden)`;
  const select = $('key-scope');
  const options = [['', `All scopes (${keys.total.toLocaleString()})`], ...keys.scopes.map((s) => [s.scope, `${s.scope} (${s.keys.toLocaleString()})`])];
  if (keys.scope && !keys.scopes.some((s) => s.scope === keys.scope)) options.push([keys.scope, `${keys.scope} (0)`]);
  const same = select.options.length === options.length && options.every(([v], i) => select.options[i].value === v);
  if (same) options.forEach(([, label], i) => { if (select.options[i].textContent !== label) select.options[i].textContent = label; });
  else select.replaceChildren(...options.map(([value, label]) => h('option', { value, selected: value === keys.scope }, label)));
  renderSummary();
}

/** Applies the keys a change event names: rows shown are replaced in place, new matches added, deleted ones removed. */
function patchKeys(changed) {
  const index = new Map(keys.rows.map((k, i) => [rowId(k.scope, k.key), i]));
  let structure = false;
  for (const c of changed) {
    const at = index.get(rowId(c.scope, c.key));
    const scopeCount = keys.scopes.find((s) => s.scope === c.scope);
    if (c.deleted) {
      if (scopeCount) scopeCount.keys = Math.max(0, scopeCount.keys - 1);
      keys.total = Math.max(0, keys.total - 1);
      if (at !== undefined) {
        keys.rows.splice(at, 1);
        keys.matched = Math.max(0, keys.matched - 1);
        structure = true;
        index.clear();
        keys.rows.forEach((k, i) => index.set(rowId(k.scope, k.key), i));
      }
      continue;
    }
    if (at !== undefined) {
      keys.rows[at] = c;
      const row = [...$('scopes').querySelectorAll('tr[data-key]')].find((tr) => tr.dataset.key === c.key && tr.closest('[data-scope]')?.dataset.scope === c.scope);
      if (row) row.replaceWith(renderKeyRow(c.scope, c));
      else structure = true;
      continue;
    }
    // a key not on the page: a change to one already counted, or a new key, shown if the page holds every match
    if (c.version !== 1) continue;
    keys.total++;
    if (scopeCount) scopeCount.keys++;
    else keys.scopes.push({ scope: c.scope, keys: 1 });
    if (!matchesQuery(c)) continue;
    const complete = keys.rows.length >= keys.matched;
    keys.matched++;
    if (complete) {
      keys.rows.push(c);
      keys.rows.sort((a, b) => (a.scope === b.scope ? (a.key < b.key ? -1 : 1) : 0));
      structure = true;
    }
  }
  if (structure) renderKeys();
  else renderKeyCounts();
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
