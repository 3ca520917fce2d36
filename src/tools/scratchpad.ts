// The scratchpad tools: this run's working memory.
import * as z from 'zod';
import type { ScratchpadService } from '../services/scratchpad.js';
import { counter, idempotencyKey, json, jsonValue } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false } as const;

/** Registers the scratchpad family (this run's working memory). */
export function registerScratchpadTools(host: ToolHost, scratchpad: ScratchpadService): void {
  defineTool(
    host,
    'scratchpad_store',
    {
      title: 'Remember a variable',
      description: 'Store a named value in this run\'s scratchpad.',
      input: z.object({ name: z.string().describe('Variable name'), value: json(jsonValue), idempotencyKey }).strict(),
      output: z.object({ name: z.string(), variables: counter }),
      annotations: { ...write, destructiveHint: true },
    },
    (args, _extra, call) => scratchpad.storeVariable(args, call),
  );
  defineTool(
    host,
    'scratchpad_observe',
    {
      title: 'Note an observation',
      description: 'Add a fact you learned to this run\'s scratchpad.',
      input: z.object({ observation: z.string().describe('The fact'), idempotencyKey }).strict(),
      output: z.object({ observations: counter }),
      annotations: write,
    },
    (args, _extra, call) => scratchpad.observe(args, call),
  );
  defineTool(
    host,
    'scratchpad_fail',
    {
      title: 'Record a failed approach',
      description: 'Record an approach that failed, not to retry it this run.',
      input: z.object({ approach: z.string().describe('What you tried'), reason: z.string().optional().describe('Why it failed'), idempotencyKey }).strict(),
      output: z.object({ failedApproaches: counter }),
      annotations: write,
    },
    (args, _extra, call) => scratchpad.fail(args, call),
  );
  defineTool(
    host,
    'scratchpad_read',
    {
      title: 'Read the scratchpad',
      description: 'This run\'s scratchpad, and context: a compact text of it for your prompt.',
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
      description: 'Empty this run\'s scratchpad.',
      input: z.object({ idempotencyKey }).strict(),
      output: z.object({ cleared: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args, _extra, call) => scratchpad.clear(args, call),
  );
}
