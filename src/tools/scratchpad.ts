// The scratchpad tools: this run's working memory, written by kind and read whole.
import * as z from 'zod';
import { SCRATCHPAD_KINDS, type ScratchpadService } from '../services/scratchpad.js';
import { counter, idempotencyKey, json, jsonValue, maxBytes, READ_DEFAULT_BYTES } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const counts = { variables: counter, observations: counter, failedApproaches: counter };

/** Registers the scratchpad family (this run's working memory): scratchpad_write, scratchpad_read. */
export function registerScratchpadTools(host: ToolHost, scratchpad: ScratchpadService): void {
  defineTool(
    host,
    'scratchpad_write',
    () => ({
      title: 'Note something for this run',
      description: 'Note a variable, observation or failed_approach in private run memory; shared: {tool:state_set}. Returns counts.',
      input: z
        .object({
          kind: z.enum(SCRATCHPAD_KINDS),
          name: z.string().optional().describe('For a variable'),
          value: json(jsonValue).describe('Any JSON value (text for notes)'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ kind: z.enum(SCRATCHPAD_KINDS), name: z.string().optional(), ...counts }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    }),
    (args, _extra, call) => scratchpad.write(args, call),
  );
  defineTool(
    host,
    'scratchpad_read',
    () => ({
      title: 'Read the scratchpad',
      description: "This run's notes (new run: none). Returns variables, observations, failedApproaches, context.",
      input: z.object({ maxBytes }).strict(),
      output: z.object({
        variables: z.record(z.string(), json(jsonValue)),
        observations: z.array(z.string()),
        failedApproaches: z.array(z.object({ approach: z.string(), reason: z.string().optional() })),
        context: z.string(),
        truncated: z.boolean().optional(),
        omitted: z.record(z.string(), counter).optional(),
      }),
      annotations: { readOnlyHint: true },
    }),
    (args) => scratchpad.read(args.maxBytes ?? READ_DEFAULT_BYTES),
  );
}
