// The budget tools: budget_status, budget_step, and with admin budget_configure and budget_increase.
import * as z from 'zod';
import type { BudgetService } from '../services/budget.js';
import { counter, idempotencyKey, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const view = z.object({ name: z.string(), current: counter, max: counter, remaining: counter, reached: z.boolean() });
const name = z.string().describe('Budget name');

/** Registers budget_status and budget_step; budget_configure and budget_increase only with `admin`. */
export function registerBudgetTools(host: ToolHost, budget: BudgetService, admin: boolean): void {
  defineTool(
    host,
    'budget_status',
    {
      title: 'Budgets left',
      description: 'This thread\'s budgets: used, max, remaining, reached.',
      input: z.object({}).strict(),
      output: z.object({ budgets: z.array(view) }),
      annotations: { readOnlyHint: true },
    },
    () => budget.status(),
  );
  defineTool(
    host,
    'budget_step',
    {
      title: 'Spend budget',
      description: 'Spend budget (parents\' too) before a step. LIMIT_REACHED (nothing spent): stop, give your final answer.',
      input: z
        .object({
          name: name.optional().describe('Default "iterations"'),
          amount: z.number().int().min(1).max(1e12).optional().describe('Default 1'),
          idempotencyKey,
        })
        .strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, _extra, call) => budget.step(args, call),
  );
  if (!admin) return;
  defineTool(
    host,
    'budget_configure',
    {
      title: 'Set a budget (admin)',
      description: 'Operator tool: set a thread\'s stored max for a budget.',
      input: z.object({ name, max: z.number().int().min(0).describe('New max'), thread: threadArg, idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args, _extra, call) => budget.configure(args, call),
  );
  defineTool(
    host,
    'budget_increase',
    {
      title: 'Raise a budget (admin)',
      description: 'Operator tool: raise a thread\'s stored max for a budget by amount.',
      input: z.object({ name, amount: z.number().int().min(1).describe('Added to the max'), thread: threadArg, idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, _extra, call) => budget.increase(args, call),
  );
}
