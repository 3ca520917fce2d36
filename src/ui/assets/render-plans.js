// The renderer's plan cards: progress, steps with their claims and blockers, and when a plan counts as complete.
import { bar, h, keyed, mark, plural, short, threadLink } from './render-dom.js';
import { now, time } from './render-time.js';

const STEP_ICONS = { pending: '○', in_progress: '◐', completed: '✓', blocked: '■', skipped: '–' };

const isDone = (s) => s.status === 'completed' || s.status === 'skipped';
/** A plan's steps done and in all (a board that left some steps out says how many it has). */
export const stepTotals = (p) => p.stepCounts ?? { done: p.steps.filter(isDone).length, total: p.steps.length };
/** A plan whose steps are all done is complete, whatever its status says. */
export const planComplete = (p) => {
  const { done, total } = stepTotals(p);
  return p.status === 'completed' || (total > 0 && done === total);
};

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
