import * as z from 'zod';
import { SIGNAL_KINDS, type SignalService } from '../services/signals.js';
import { idempotencyKey } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** Registers `signal`: recorded in history and sent to the client as an MCP logging message. */
export function registerSignalTools(host: ToolHost, signals: SignalService): void {
  defineTool(
    host,
    'signal',
    {
      title: 'Signal your confidence',
      description:
        'Tell the people and agents watching how you are doing: uncertain (you are unsure and may need help), explore (you are trying options), commit (you are confident and proceeding). Recorded in history and sent to the client as a log message.',
      input: z
        .object({
          kind: z.enum(SIGNAL_KINDS),
          confidence: z.number().optional().describe('0 to 1'),
          note: z.string().optional(),
          idempotencyKey,
        })
        .strict(),
      output: z.object({
        seq: z.number().int(),
        kind: z.enum(SIGNAL_KINDS),
        confidence: z.number().optional(),
        note: z.string().optional(),
        thread: z.string(),
        run: z.string(),
        agent: z.string().nullable(),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    async (args) => {
      const event = await signals.signal(args);
      await host.server.sendLoggingMessage({ level: event.kind === 'uncertain' ? 'warning' : 'info', logger: 'mcp-blackboard.signal', data: event }).catch(() => {});
      return event;
    },
  );
}
