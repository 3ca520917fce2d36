// The renderer's times: ages and lease ends against the server's clock, kept current; and when a shown lease ends.
import { h } from './render-dom.js';

/** The server's clock minus this page's: leases and ages are shown against the server's clock. */
export const clock = { skew: 0 };
export const now = () => Date.now() + clock.skew;

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
