import * as z from 'zod';
import type { BudgetService } from '../services/budget.js';
import { idempotencyKey, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const view = z.object({
  name: z.string(),
  current: z.number().int(),
  max: z.number().int(),
  remaining: z.number().int(),
  reached: z.boolean(),
});

/** Registers budget_status and budget_step; budget_configure and budget_increase only with `admin`. */
export function registerBudgetTools(host: ToolHost, budget: BudgetService, admin: boolean): void {
  defineTool(
    host,
    'budget_status',
    {
      title: 'Budgets left',
      description: 'Show this thread\'s budgets: used, max, remaining, and whether each is reached.',
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
      description:
        'Count one step (or amount) against a budget (default "iterations") before doing the work. LIMIT_REACHED means the budget — yours or a parent thread\'s — is used up and nothing was counted: stop, summarise, and give your final answer.',
      input: z.object({ name: z.string().optional(), amount: z.number().int().optional(), idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args) => budget.step(args),
  );
  if (!admin) return;
  defineTool(
    host,
    'budget_configure',
    {
      title: 'Set a budget (admin)',
      description: 'Set the max of a budget for a thread (default this one). Operator tool: registered only with --allow-budget-admin.',
      input: z.object({ name: z.string(), max: z.number().int(), thread: threadArg, idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args) => budget.configure(args),
  );
  defineTool(
    host,
    'budget_increase',
    {
      title: 'Raise a budget (admin)',
      description: 'Raise the max of a budget for a thread by amount. Operator tool: registered only with --allow-budget-admin.',
      input: z.object({ name: z.string(), amount: z.number().int(), thread: threadArg, idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args) => budget.increase(args),
  );
}
