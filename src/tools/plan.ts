// The plan tools: plan_create, plan_get, plan_list, plan_update, plan_claim, plan_delete.
import * as z from 'zod';
import { CLAIM_REASONS, PLAN_LIST_DEFAULT, PLAN_LIST_MAX, PLAN_STATUSES, STEP_STATUSES, type PlanService } from '../services/plan.js';
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
  blockedBy: z.array(z.string()).optional(),
  note: z.string().optional(),
});
// Step objects are described as a whole by the argument that holds them, to keep the listing small.
const newStep = z.object({ content: z.string(), owner: z.string().optional(), blockedBy: stepIds.optional(), note: z.string().optional() }).strict();
/** a step of plan_update's `steps`: an `id` keeps that step */
const listedStep = newStep.extend({ id: z.string().optional(), status: stepStatus.optional() }).strict();
const plan = z.object({
  planId: z.string(),
  title: z.string(),
  status: z.enum(PLAN_STATUSES),
  scope: z.string(),
  steps: z.array(step),
  version: counter,
  createdAt: isoTime,
  updatedAt: isoTime,
  updatedBy: z.string(),
});
const write = { readOnlyHint: false, destructiveHint: true, idempotentHint: false } as const;

/** Registers the plan family: plan_create, plan_get, plan_list, plan_update, plan_claim, plan_delete. */
export function registerPlanTools(host: ToolHost, plans: PlanService): void {
  defineTool(
    host,
    'plan_create',
    {
      title: 'Create a plan',
      description: 'Create a plan: a title and ordered steps, which get ids s1, s2, …. Returns planId.',
      input: z
        .object({
          title: z.string().describe('Plan title'),
          steps: z.array(z.union([z.string(), newStep])).max(200).describe('Texts, or {content, owner, blockedBy: step ids to finish first, note}'),
          scope: z.string().optional().describe('Default thread'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ planId: z.string(), plan }),
      annotations: { ...write, destructiveHint: false },
    },
    (args) => plans.create(args),
  );

  defineTool(
    host,
    'plan_get',
    {
      title: 'Read a plan',
      description: 'Read a plan and its steps. Wait for changes with {tool:watch} (key: planId, scope: plan).',
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
      description: 'List a scope\'s plans, latest first, with step counts. truncated:true: there are more.',
      input: z
        .object({
          status: z.enum(PLAN_STATUSES).optional().describe('Filter'),
          scope: z.string().optional().describe('Default thread'),
          limit: z.number().int().min(1).max(PLAN_LIST_MAX).optional().describe(`Default ${PLAN_LIST_DEFAULT}`),
        })
        .strict(),
      output: z.object({
        plans: z.array(plan.omit({ steps: true }).extend({ stepCount: counter, doneCount: counter })),
        truncated: z.boolean(),
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
      description: 'Edit a plan\'s title, status or steps, or single steps (stepUpdates; null clears). Blocked steps cannot start or complete.',
      input: z
        .object({
          planId,
          ifVersion,
          title: z.string().optional().describe('New title'),
          status: z.enum(PLAN_STATUSES).optional().describe('Plan status'),
          steps: z.array(z.union([z.string(), listedStep])).max(200).optional().describe('Replaces the step list; an item with an id keeps that step'),
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
      output: z.object({ plan }),
      annotations: write,
    },
    (args) => plans.update(args),
  );

  defineTool(
    host,
    'plan_claim',
    {
      title: 'Take a step of a plan',
      description: 'Atomically take a step (the named one, or the next free one whose blockers are done): it becomes in_progress, yours. Else claimed:false, reason.',
      input: z
        .object({
          planId,
          stepId: z.string().optional().describe('Default: next free'),
          owner: z.string().optional().describe('Default: your agent name'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ claimed: z.boolean(), step: step.optional(), reason: z.enum(CLAIM_REASONS).optional() }),
      annotations: { ...write, destructiveHint: false },
    },
    (args) => plans.claim(args),
  );

  defineTool(
    host,
    'plan_delete',
    {
      title: 'Delete a plan',
      description: 'Delete a plan.',
      input: z.object({ planId, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: write,
    },
    (args) => plans.delete(args),
  );
}
