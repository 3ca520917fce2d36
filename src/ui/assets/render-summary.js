// The renderer's summary line: what the threads are doing, the plans' progress, the keys.
import { h, plural } from './render-dom.js';
import { planComplete, stepTotals } from './render-plans.js';

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
