// The budget tools: budget_status, budget_step, and the admin's budget_configure and budget_increase.
import * as z from 'zod';
import type { BudgetService } from '../services/budget.js';
import { counter, idempotencyKey, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const view = z.object({ name: z.string(), current: counter, max: counter, remaining: counter, reached: z.boolean() });
const name = z.string();

/**
 * Declares budget_status, budget_step, budget_configure and budget_increase; a server's tool selection keeps the last
 * two only with `--allow-budget-admin`.
 */
export function registerBudgetTools(host: ToolHost, budget: BudgetService): void {
  defineTool(
    host,
    'budget_status',
    () => ({
      title: 'Budgets left',
      description: 'Budgets, no spending ({tool:whoami} too). Returns current, max, remaining, reached each.',
      input: z.object({}).strict(),
      output: z.object({ budgets: z.array(view) }),
      annotations: { readOnlyHint: true },
    }),
    () => budget.status(),
  );
  defineTool(
    host,
    'budget_step',
    () => ({
      title: 'Spend budget',
      description: 'Spend budget before a costly step. Returns current, max, remaining; LIMIT_REACHED: stop, {tool:final_answer_set}.',
      input: z
        .object({
          name: name.optional().describe('Default "iterations"'),
          amount: z.number().int().min(1).max(1e12).optional().describe('Default 1'),
          idempotencyKey,
        })
        .strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    (args, _extra, call) => budget.step(args, call),
  );
  defineTool(
    host,
    'budget_configure',
    () => ({
      title: 'Set a budget (admin)',
      description: "Operator: set a budget's max for a thread. Returns current, max, remaining.",
      input: z.object({ name, max: z.number().int().min(0), thread: threadArg, idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    }),
    (args, _extra, call) => budget.configure(args, call),
  );
  defineTool(
    host,
    'budget_increase',
    () => ({
      title: 'Raise a budget (admin)',
      description: "Operator: raise a budget's max by amount. Returns current, max, remaining.",
      input: z.object({ name, amount: z.number().int().min(1), thread: threadArg, idempotencyKey }).strict(),
      output: view,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    (args, _extra, call) => budget.increase(args, call),
  );
}
