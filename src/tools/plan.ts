import * as z from 'zod';
import { PLAN_STATUSES, STEP_STATUSES, type PlanService } from '../services/plans.js';
import { SCOPE_FORMS } from '../context.js';
import { idempotencyKey, ifVersion, isoTime } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const planId = z.string().describe('The plan id returned by plan_create (plan-xxxxxxxxxxxx).');
const stepStatus = z.enum(STEP_STATUSES);
const step = z.object({
  id: z.string().describe('stable step id (s1, s2, …)'),
  content: z.string(),
  status: stepStatus,
  owner: z.string().optional(),
  blockedBy: z.array(z.string()).optional(),
  note: z.string().optional(),
});
const stepInput = z.union([
  z.string().describe('the step text'),
  z
    .object({
      id: z.string().optional().describe('keep this existing step (plan_update with steps); omit for a new step'),
      content: z.string(),
      status: stepStatus.optional(),
      owner: z.string().optional(),
      blockedBy: z.array(z.string()).optional().describe('ids of steps that must finish first'),
      note: z.string().optional(),
    })
    .strict(),
]);
const plan = z.object({
  planId: z.string(),
  title: z.string(),
  status: z.enum(PLAN_STATUSES),
  scope: z.string(),
  steps: z.array(step),
  version: z.number().int(),
  createdAt: isoTime,
  updatedAt: isoTime,
  updatedBy: z.string(),
});

/** Registers the plan family: plan_create, plan_get, plan_list, plan_update, plan_delete. */
export function registerPlanTools(host: ToolHost, plans: PlanService): void {
  defineTool(
    host,
    'plan_create',
    {
      title: 'Create a plan',
      description:
        'Create a plan: a title and ordered steps (strings, or objects with owner and blockedBy). Steps get stable ids s1, s2, …. Plans live in the thread scope unless you give another scope. Keep the planId to update it.',
      input: z
        .object({
          title: z.string(),
          steps: z.array(stepInput).describe('up to 200 steps'),
          scope: z.string().optional().describe(`Default "thread". One of: ${SCOPE_FORMS}.`),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ planId: z.string(), plan }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args) => plans.create(args),
  );

  defineTool(
    host,
    'plan_get',
    {
      title: 'Read a plan',
      description: 'Read a plan by id. NOT_FOUND means it was deleted or expired. To wait for a plan to change, call watch with key = planId and scope = "plan".',
      input: z.object({ planId }).strict(),
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
      description: 'List the plans of a scope (default this thread), optionally by status, with step counts (read one with plan_get for its steps).',
      input: z.object({ status: z.enum(PLAN_STATUSES).optional(), scope: z.string().optional() }).strict(),
      output: z.object({
        plans: z.array(
          plan.omit({ steps: true }).extend({
            stepCount: z.number().int(),
            doneCount: z.number().int().describe('steps completed or skipped'),
          }),
        ),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => plans.list(args),
  );

  defineTool(
    host,
    'plan_update',
    {
      title: 'Update a plan',
      description:
        'Change a plan: title, status (active | completed | abandoned), the whole step list (steps: items with an id keep that step), or single steps (stepUpdates: [{id, status?, owner?, note?, content?, blockedBy?}], null clears a field). Pass ifVersion from your last read so concurrent edits are not lost; on VERSION_CONFLICT read it again. Completed and abandoned plans expire after the plan TTL (7 days by default).',
      input: z
        .object({
          planId,
          ifVersion,
          title: z.string().optional(),
          status: z.enum(PLAN_STATUSES).optional(),
          steps: z.array(stepInput).optional(),
          stepUpdates: z
            .array(
              z
                .object({
                  id: z.string(),
                  content: z.string().optional(),
                  status: stepStatus.optional(),
                  owner: z.string().nullable().optional(),
                  blockedBy: z.array(z.string()).nullable().optional(),
                  note: z.string().nullable().optional(),
                })
                .strict(),
            )
            .optional(),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ plan }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => plans.update(args),
  );

  defineTool(
    host,
    'plan_delete',
    {
      title: 'Delete a plan',
      description: 'Delete a plan. NOT_FOUND if there is no such plan.',
      input: z.object({ planId, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => plans.delete(args),
  );
}
