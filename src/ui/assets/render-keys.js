// The renderer's keys and changes: a scope's card of keys (long values folded) and the timeline of recent changes.
import { empty, h, keyed, mark, plural } from './render-dom.js';
import { time } from './render-time.js';

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
