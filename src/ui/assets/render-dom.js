// The renderer's small DOM helpers: elements, links to thread cards, meters, the changed-item marks, and keeping a
// container's unchanged children in place across a live update. Every text goes through textContent, never innerHTML.

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

export const short = (id) => (id && id.length > 14 ? `${id.slice(0, 8)}…` : id);
export const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The element id of a thread's card, and a link to it. */
export const threadAnchor = (thread) => `thread-${thread}`;
export const threadLink = (thread, ...children) => h('a', { class: 'tlink', href: `#${encodeURIComponent(threadAnchor(thread))}` }, ...children);

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

/** A meter with its accessible name; `kind` 'progress' turns green when full, 'budget' red at the limit. */
export function bar(current, max, label, kind = 'budget') {
  const ratio = max > 0 ? Math.min(1, current / max) : 1;
  const cls = kind === 'progress' ? (current >= max ? 'bar done' : 'bar') : current >= max ? 'bar full' : ratio >= 0.8 ? 'bar warn' : 'bar';
  const fill = h('i', {});
  // set through the CSSOM: the page's content security policy allows no inline style attributes
  fill.style.width = `${Math.round(ratio * 100)}%`;
  return h('div', { class: cls, role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': max, 'aria-valuenow': current, 'aria-valuetext': `${current} of ${max}` }, fill);
}

/** Names a rendered item and what it was rendered from, so that {@link reconcile} keeps it while that is unchanged. */
export function keyed(el, key, data) {
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
