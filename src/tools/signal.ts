// The signal tool: recorded in the thread's history and sent to the client as an MCP log message.
import * as z from 'zod';
import { SIGNAL_KINDS, type SignalService } from '../services/signal.js';
import { counter, idempotencyKey } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** How much of a note the reply and the log message echo. */
const NOTE_ECHO_CHARS = 2000;

/** Registers `signal`: recorded in history and sent to the client as an MCP logging message. */
export function registerSignalTools(host: ToolHost, signals: SignalService): void {
  defineTool(
    host,
    'signal',
    () => ({
      title: 'Signal your confidence',
      description: 'Say how it goes: uncertain, explore or commit; logged to history. Returns it.',
      input: z
        .object({
          kind: z.enum(SIGNAL_KINDS),
          confidence: z.number().min(0).max(1).optional(),
          note: z.string().optional(),
          idempotencyKey,
        })
        .strict(),
      output: z.object({
        seq: counter,
        kind: z.string(),
        confidence: z.number().optional(),
        note: z.string().optional(),
        noteTruncated: z.boolean().optional(),
        thread: z.string(),
        run: z.string(),
        agent: z.string().nullable(),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    async (args, extra, call) => {
      const whole = await signals.signal(args, call);
      // the note is kept whole in history; the reply and the log message echo its start, not a context's worth of it
      const long = whole.note !== undefined && whole.note.length > NOTE_ECHO_CHARS;
      const event = long ? { ...whole, note: `${whole.note!.slice(0, NOTE_ECHO_CHARS)}…`, noteTruncated: true } : whole;
      // on the request's own stream, at the level its session (2025) or its `_meta` (2026-07-28) asked for
      await extra.log(event.kind === 'uncertain' ? 'warning' : 'info', event, 'mcp-blackboard.signal').catch(() => {});
      return event;
    },
  );
}
