// The plan tools: plan_create, plan_get, plan_list, plan_update, plan_claim, plan_step, plan_delete.
import * as z from 'zod';
import { PLAN_LIST_DEFAULT, PLAN_LIST_MAX, PLAN_STATUSES, STEP_STATUSES, type PlanService } from '../services/plan.js';
import { CLAIM_REASONS, WORK_STATUSES, type PlanWork } from '../services/plan-work.js';
import { counter, idempotencyKey, ifVersion, isoTime } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const planId = z.string();
const stepStatus = z.enum(STEP_STATUSES);
/** the statuses a step may be given as it is written (blocked follows from its blockers) */
const givenStatus = z.enum(['pending', 'in_progress', 'completed', 'skipped']);
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
  .object({
    content: z.string(),
    status: givenStatus.optional(),
    owner: z.string().optional(),
    blockedBy: stepIds.optional(),
    note: z.string().optional(),
    activeForm: z.string().optional(),
  })
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
  args.steps === undefined
    ? args
    : { ...args, steps: args.steps.map((s) => (typeof s === 'string' ? s : (({ activeForm: _a, ...rest }) => rest)(s))) };

/** Registers the plan family: plan_create, plan_get, plan_list, plan_update, plan_claim, plan_step, plan_delete. */
export function registerPlanTools(host: ToolHost, plans: PlanService, work: PlanWork): void {
  defineTool(
    host,
    'plan_create',
    () => ({
      title: 'Create a plan',
      description:
        'Create a plan: title, steps (ids s1, s2…), global unless scoped; workers find it via {tool:plan_list}. Returns planId, stepIds.',
      input: z
        .object({
          title: z.string(),
          steps: z
            .array(z.union([z.string(), newStep]))
            .max(200)
            .describe('Each {content, blockedBy: ids first, …}, or its text alone'),
          scope: z.string().optional().describe('Default global'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ planId: z.string(), version: counter, scope: z.string(), stepIds, ...counts }),
      annotations: { ...write, destructiveHint: false },
    }),
    (args, _extra, call) => plans.create(stripActiveForm(args), call),
  );

  defineTool(
    host,
    'plan_get',
    () => ({
      title: 'Read a plan',
      description: 'Read a plan (content cut, paged; detail "full": notes, claims); to follow: {tool:watch} planId, scope plan.',
      input: z
        .object({
          planId,
          detail: z.enum(['summary', 'full']).optional(),
          cursor: z.string().optional(),
        })
        .strict(),
      output: z.object({ plan, nextCursor: z.string().optional() }),
      annotations: { readOnlyHint: true },
    }),
    (args) => plans.get(args),
  );

  defineTool(
    host,
    'plan_list',
    () => ({
      title: 'List plans',
      description: "Plans you can see (or a scope's), newest first, step counts, paged.",
      input: z
        .object({
          status: z.enum(PLAN_STATUSES).optional(),
          scope: z.string().optional().describe('Default: all yours'),
          cursor: z.string().optional(),
          limit: z.number().int().min(1).max(PLAN_LIST_MAX).optional().describe(`Default ${PLAN_LIST_DEFAULT}`),
        })
        .strict(),
      output: z.object({ plans: z.array(summary), nextCursor: z.string().optional(), hint: z.string().optional() }),
      annotations: { readOnlyHint: true },
    }),
    (args) => plans.list(args),
  );

  defineTool(
    host,
    'plan_update',
    () => ({
      title: 'Update a plan',
      description:
        'Edit a plan: title, status, steps by id (stepUpdates; owner reassigns) or all (steps + ifVersion). Returns changes, counts.',
      input: z
        .object({
          planId,
          ifVersion,
          title: z.string().optional(),
          status: z.enum(PLAN_STATUSES).optional(),
          steps: z
            .array(z.union([z.string(), listedStep]))
            .max(200)
            .optional()
            .describe('New list; kept by id or content'),
          stepUpdates: z
            .array(
              z
                .object({
                  id: z.string(),
                  content: z.string().optional(),
                  status: stepStatus.optional(),
                  owner: z.string().optional(),
                  blockedBy: stepIds.optional(),
                  note: z.string().optional(),
                })
                .strict(),
            )
            .optional()
            .describe('"" or [] clears'),
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
    }),
    (args, _extra, call) => plans.update(stripActiveForm(args), call),
  );

  defineTool(
    host,
    'plan_claim',
    () => ({
      title: 'Take a step of a plan',
      description:
        'Take the next free step (or stepId); your calls renew it; finish with {tool:plan_step}. Returns step, claim, or claimed:false, reason.',
      input: z.object({ planId, stepId: z.string().optional().describe('Default: next free'), idempotencyKey }).strict(),
      output: z.object({
        claimed: z.boolean(),
        step: step.optional(),
        claim: z.object({ fence: counter, leaseUntil: isoTime }).optional(),
        reason: z.enum(CLAIM_REASONS).optional(),
      }),
      annotations: { ...write, destructiveHint: false },
    }),
    (args, _extra, call) => work.claim(args, call),
  );

  defineTool(
    host,
    'plan_step',
    () => ({
      title: 'Move your step',
      description:
        'Move your step: completed, skipped, pending (give back), in_progress. Returns step, counts, unblocked; CLAIM_LOST: lapsed.',
      input: z
        .object({
          planId,
          stepId: z.string(),
          status: z.enum(WORK_STATUSES),
          note: z.string().optional(),
          fence: z.number().int().min(1).optional().describe('Strict check'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ planId: z.string(), version: counter, step, ...counts, unblocked: stepIds }),
      annotations: { ...write, destructiveHint: false },
    }),
    (args, _extra, call) => work.step(args, call),
  );

  defineTool(
    host,
    'plan_delete',
    () => ({
      title: 'Delete a plan',
      description: "Delete a plan (none with others' work).",
      input: z.object({ planId, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: write,
    }),
    (args, _extra, call) => plans.delete(args, call),
  );
}
