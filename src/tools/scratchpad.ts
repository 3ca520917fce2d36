import * as z from 'zod';
import type { ScratchpadService } from '../services/scratchpad.js';
import { idempotencyKey, json, jsonValue } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false } as const;

/** Registers the scratchpad family (this run's working memory). */
export function registerScratchpadTools(host: ToolHost, scratchpad: ScratchpadService): void {
  defineTool(
    host,
    'scratchpad_store',
    {
      title: 'Remember a variable',
      description: 'Store a named value in this run\'s scratchpad (replaces a value of the same name). Cleared by run_start.',
      input: z.object({ name: z.string(), value: json(jsonValue), idempotencyKey }).strict(),
      output: z.object({ name: z.string(), variables: z.number().int().describe('how many variables are stored') }),
      annotations: { ...write, destructiveHint: true },
    },
    (args) => scratchpad.storeVariable(args),
  );
  defineTool(
    host,
    'scratchpad_observe',
    {
      title: 'Note an observation',
      description: 'Add an observation (a fact you learned) to this run\'s scratchpad.',
      input: z.object({ observation: z.string(), idempotencyKey }).strict(),
      output: z.object({ observations: z.number().int() }),
      annotations: write,
    },
    (args) => scratchpad.observe(args),
  );
  defineTool(
    host,
    'scratchpad_fail',
    {
      title: 'Record a failed approach',
      description: 'Record an approach that did not work, and why, so it is not tried again in this run.',
      input: z.object({ approach: z.string(), reason: z.string().optional(), idempotencyKey }).strict(),
      output: z.object({ failedApproaches: z.number().int() }),
      annotations: write,
    },
    (args) => scratchpad.fail(args),
  );
  defineTool(
    host,
    'scratchpad_read',
    {
      title: 'Read the scratchpad',
      description: 'Read this run\'s scratchpad: variables, observations, failed approaches, and `context`, a compact text to put in your prompt.',
      input: z.object({}).strict(),
      output: z.object({
        variables: z.record(z.string(), json(jsonValue)),
        observations: z.array(z.string()),
        failedApproaches: z.array(z.object({ approach: z.string(), reason: z.string().optional() })),
        context: z.string(),
      }),
      annotations: { readOnlyHint: true },
    },
    () => scratchpad.read(),
  );
  defineTool(
    host,
    'scratchpad_clear',
    {
      title: 'Clear the scratchpad',
      description: 'Empty this run\'s scratchpad: variables, observations and failed approaches all go.',
      input: z.object({ idempotencyKey }).strict(),
      output: z.object({ cleared: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args) => scratchpad.clear(args),
  );
}
