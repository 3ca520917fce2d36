// The web board's keys panel: a page of keys at a time, searched on the server, patched in place as changes arrive.
import { empty, h, reconcile, renderKeyRow, renderScope } from './render.js';

const PAGE = 100;
const $ = (id) => document.getElementById(id);

/**
 * The page's keys panel: `keys` is what it shows and searches for, `load` reads the first page for the search (or
 * appends the next), `patch` applies the keys a change event names. From the page: `api` reads its JSON API,
 * `namespace()` is the namespace shown, `read(revision)` hears the store revision each page was read at, and
 * `counted()` hears that the counts changed.
 */
export function keysPanel({ api, namespace, read, counted }) {
  const keys = { q: '', scope: '', rows: [], matched: 0, total: 0, scopes: [], truncated: false, generation: 0 };
  const rowId = (scope, key) => `${scope}\u0000${key}`;
  const words = () => keys.q.toLowerCase().split(/\s+/).filter(Boolean);
  const matchesQuery = (k) => (!keys.scope || k.scope === keys.scope) && words().every((w) => `${k.scope}\n${k.key}\n${k.value}`.toLowerCase().includes(w));

  /** Reads the first page of keys for the search (or the next page, appended). */
  async function loadKeys(append = false) {
    const generation = ++keys.generation;
    const params = new URLSearchParams({ ns: namespace(), offset: String(append ? keys.rows.length : 0), limit: String(PAGE) });
    if (keys.q) params.set('q', keys.q);
    if (keys.scope) params.set('scope', keys.scope);
    const page = await api(`/board/api/keys?${params}`);
    if (generation !== keys.generation) return;
    keys.rows = append ? keys.rows.concat(page.keys) : page.keys;
    Object.assign(keys, { matched: page.matched, total: page.total, scopes: page.scopes, truncated: page.truncated });
    read(page.revision);
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
    counted();
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

  return { keys, load: loadKeys, patch: patchKeys };
}
