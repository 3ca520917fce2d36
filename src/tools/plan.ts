// The plan tools: plan_create, plan_get, plan_list, plan_update, plan_claim, plan_step, plan_delete.
import * as z from 'zod';
import { PLAN_LIST_DEFAULT, PLAN_LIST_MAX, PLAN_STATUSES, STEP_STATUSES, type PlanService } from '../services/plan.js';
import { CLAIM_REASONS, WORK_STATUSES, type PlanWork } from '../services/plan-work.js';
import { counter, idempotencyKey, ifVersion, isoTime } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const planId = z.string().describe('plan-…');
const stepStatus = z.enum(STEP_STATUSES);
const stepIds = z.array(z.string());
const step = z.object({
  id: z.string(),
  content: z.string(),
  status: stepStatus,
  owner: z.string().optional(),
  blockedBy: stepIds.optional(),
  note: z.string().optional(),
  attempts: counter.optional(),
  claim: z.object({ thread: z.string(), fence: counter, leaseUntil: isoTime }).optional(),
});
// Step objects are described as a whole by the argument that holds them, to keep the listing small. `activeForm`
// is accepted (and not kept) so a to-do list written for other tools fits as it is.
const newStep = z
  .object({ content: z.string(), status: stepStatus.optional(), owner: z.string().optional(), blockedBy: stepIds.optional(), note: z.string().optional(), activeForm: z.string().optional() })
  .strict();
/** a step of plan_update's `steps`: an `id` keeps that step */
const listedStep = newStep.extend({ id: z.string().optional() }).strict();
const counts = { done: counter, total: counter };
const summary = z.object({
  planId: z.string(),
  title: z.string(),
  status: z.enum(PLAN_STATUSES),
  scope: z.string(),
  version: counter,
  updatedAt: isoTime,
  ...counts,
});
const plan = summary.extend({ createdAt: isoTime, updatedBy: z.string(), steps: z.array(step) });
const write = { readOnlyHint: false, destructiveHint: true, idempotentHint: false } as const;
const stripActiveForm = <T extends { steps?: Array<string | { activeForm?: string }> }>(args: T): T =>
  args.steps === undefined ? args : { ...args, steps: args.steps.map((s) => (typeof s === 'string' ? s : (({ activeForm: _a, ...rest }) => rest)(s))) };

/** Registers the plan family: plan_create, plan_get, plan_list, plan_update, plan_claim, plan_step, plan_delete. */
export function registerPlanTools(host: ToolHost, plans: PlanService, work: PlanWork): void {
  defineTool(
    host,
    'plan_create',
    {
      title: 'Create a plan',
      description: 'Create a shared plan: a title and ordered steps (text or {content, status, blockedBy}), ids s1, s2, …. Default scope global, where workers find it with {tool:plan_list}. Returns planId, version, stepIds.',
      input: z
        .object({
          title: z.string().describe('Plan title'),
          steps: z.array(z.union([z.string(), newStep])).max(200).describe('Texts, or {content, status, owner, blockedBy: step ids to finish first, note}'),
          scope: z.string().optional().describe('Default global'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ planId: z.string(), version: counter, scope: z.string(), stepIds, ...counts }),
      annotations: { ...write, destructiveHint: false },
    },
    (args, _extra, call) => plans.create(stripActiveForm(args), call),
  );

  defineTool(
    host,
    'plan_get',
    {
      title: 'Read a plan',
      description: 'Read a plan: each step\'s id, status, owner, blockers, content cut short (detail "full": whole, with notes and claims). Wait for changes with {tool:watch} (key: planId, scope: plan).',
      input: z.object({ planId, detail: z.enum(['summary', 'full']).optional() }).strict(),
      output: z.object({ plan }),
      annotations: { readOnlyHint: true },
    },
    (args) => plans.get(args),
  );

  defineTool(
    host,
    'plan_list',
    {
      title: 'List plans',
      description: 'List the plans you can see (global, your delegation tree\'s, your thread\'s; or one scope), newest first, with step counts. More with nextCursor.',
      input: z
        .object({
          status: z.enum(PLAN_STATUSES).optional().describe('Filter'),
          scope: z.string().optional(),
          cursor: z.string().optional(),
          limit: z.number().int().min(1).max(PLAN_LIST_MAX).optional().describe(`Default ${PLAN_LIST_DEFAULT}`),
        })
        .strict(),
      output: z.object({ plans: z.array(summary), nextCursor: z.string().optional(), hint: z.string().optional() }),
      annotations: { readOnlyHint: true },
    },
    (args) => plans.list(args),
  );

  defineTool(
    host,
    'plan_update',
    {
      title: 'Update a plan',
      description: 'Edit a plan: title, status, single steps (stepUpdates; null clears; owner reassigns a held step), or the whole list (steps, needs ifVersion; steps match by id or content). Returns changed steps and counts.',
      input: z
        .object({
          planId,
          ifVersion,
          title: z.string().optional().describe('New title'),
          status: z.enum(PLAN_STATUSES).optional().describe('Plan status'),
          steps: z.array(z.union([z.string(), listedStep])).max(200).optional().describe('Replaces the step list; in-progress and completed steps must stay'),
          stepUpdates: z
            .array(
              z
                .object({
                  id: z.string(),
                  content: z.string().optional(),
                  status: stepStatus.optional(),
                  owner: z.string().nullable().optional(),
                  blockedBy: stepIds.nullable().optional(),
                  note: z.string().nullable().optional(),
                })
                .strict(),
            )
            .optional()
            .describe('Changes to single steps by id'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({
        planId: z.string(),
        version: counter,
        status: z.enum(PLAN_STATUSES),
        changed: z.array(step),
        removed: stepIds.optional(),
        ...counts,
        unblocked: stepIds,
      }),
      annotations: write,
    },
    (args, _extra, call) => plans.update(stripActiveForm(args), call),
  );

  defineTool(
    host,
    'plan_claim',
    {
      title: 'Take a step of a plan',
      description: 'Take a step to work on: the named one or the next free one whose blockers are done. Returns it with claim {fence, leaseUntil}; your calls renew it. Finish with {tool:plan_step}. Else claimed:false, reason.',
      input: z.object({ planId, stepId: z.string().optional().describe('Default: next free'), idempotencyKey }).strict(),
      output: z.object({
        claimed: z.boolean(),
        step: step.optional(),
        claim: z.object({ fence: counter, leaseUntil: isoTime }).optional(),
        reason: z.enum(CLAIM_REASONS).optional(),
      }),
      annotations: { ...write, destructiveHint: false },
    },
    (args, _extra, call) => work.claim(args, call),
  );

  defineTool(
    host,
    'plan_step',
    {
      title: 'Move your step',
      description: 'Move a step you hold: completed, skipped, pending (give back) or in_progress. Returns the step, done/total and steps it unblocked. CLAIM_LOST: your claim lapsed and went to another; take a new step.',
      input: z
        .object({
          planId,
          stepId: z.string(),
          status: z.enum(WORK_STATUSES),
          note: z.string().optional(),
          fence: z.number().int().min(1).optional().describe('Strict: only if your claim still has this fence'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ planId: z.string(), version: counter, step, ...counts, unblocked: stepIds }),
      annotations: { ...write, destructiveHint: false },
    },
    (args, _extra, call) => work.step(args, call),
  );

  defineTool(
    host,
    'plan_delete',
    {
      title: 'Delete a plan',
      description: 'Delete a plan. An active plan with steps others hold is refused: mark it abandoned with {tool:plan_update}.',
      input: z.object({ planId, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: write,
    },
    (args, _extra, call) => plans.delete(args, call),
  );
}
