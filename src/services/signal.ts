// The signal service: metacognitive signals recorded in the thread's history.
import type { CallOptions } from '../context.js';
import { invalid } from '../errors.js';
import type { HistoryService } from './history.js';
import type { Session } from './session.js';

export const SIGNAL_KINDS = ['uncertain', 'explore', 'commit'] as const;
export type SignalKind = (typeof SIGNAL_KINDS)[number];

export interface SignalEvent {
  seq: number;
  kind: SignalKind;
  confidence?: number;
  note?: string;
  thread: string;
  run: string;
  agent: string | null;
}

/** Metacognitive signals: recorded in the thread's history; the tool layer also sends them as MCP log messages. */
export class SignalService {
  constructor(
    private readonly session: Session,
    private readonly history: HistoryService,
  ) {}

  async signal(
    args: { kind: SignalKind; confidence?: number; note?: string; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<SignalEvent> {
    if (!(SIGNAL_KINDS as readonly string[]).includes(args.kind))
      throw invalid(`kind must be one of: ${SIGNAL_KINDS.join(', ')}.`, { path: 'kind' });
    if (args.confidence !== undefined && !(args.confidence >= 0 && args.confidence <= 1)) {
      throw invalid('confidence must be a number from 0 to 1.', { confidence: args.confidence, path: 'confidence' });
    }
    const data = {
      ...(args.confidence !== undefined ? { confidence: args.confidence } : {}),
      ...(args.note !== undefined ? { note: args.note } : {}),
    };
    const { seq } = await this.history.append(
      { kind: 'signal', content: args.kind, data, idempotencyKey: args.idempotencyKey },
      call,
      true,
    );
    const who = this.session.identity;
    return { seq, kind: args.kind, ...data, thread: who.thread, run: who.run, agent: who.agent ?? null };
  }
}
