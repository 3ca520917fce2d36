// Each registered family's record schema, where the service that writes the family declares it.
import * as z from 'zod';
import { BudgetRecord } from '../services/budget.js';
import { AnswerRecord } from '../services/finalizer.js';
import { HistoryRecord } from '../services/history.js';
import { LifecycleRecord } from '../services/lifecycle.js';
import { PlanRecordSchema } from '../services/plan-steps.js';
import { InboxPosition, MailboxEntry, MessageRecord } from '../services/mailbox.js';
import { PresenceRecord } from '../services/presence.js';
import { IndexedSince } from '../services/presence-index.js';
import { ThreadInfoRecord } from '../services/thread-info.js';
import { declarations, type FamilyName } from './registry.js';

/**
 * The schema a family's records decode with (the board and the family test decode through these). `undefined`: the
 * family's records are decoded by its own service only (counters, indexes, checkpoint manifests and blobs).
 */
export const SCHEMAS: { readonly [K in FamilyName]: z.ZodType | undefined } = {
  plan: PlanRecordSchema,
  planIndex: undefined,
  // a budget by name, or the record beside them that fixes the thread's maxes
  budget: z.union([BudgetRecord, z.object({ maxes: z.record(z.string(), z.number()) })]),
  history: HistoryRecord,
  scratchpad: undefined,
  final: AnswerRecord,
  lifecycle: LifecycleRecord,
  historySeq: undefined,
  thread: ThreadInfoRecord,
  checkpoint: undefined,
  checkpointIndex: undefined,
  checkpointHead: undefined,
  blob: undefined,
  blobRefs: undefined,
  presence: PresenceRecord,
  presenceByAgent: PresenceRecord,
  presenceByType: PresenceRecord,
  presenceIndexed: IndexedSince,
  message: MessageRecord,
  messageSeq: undefined,
  mailbox: MailboxEntry,
  mailboxWait: MailboxEntry,
  inboxPosition: InboxPosition,
};

const BY_STORED = new Map(declarations().map((f) => [f.stored, f.name]));

/**
 * Why a record stored under family `stored` cannot be a record of it, or undefined when it can: the family is one
 * this version knows, and the value decodes with the family's schema where it has one.
 */
export function familyRecordProblem(stored: string, value: unknown): string | undefined {
  const name = BY_STORED.get(stored);
  if (name === undefined) return `it belongs to no record family this version knows ("${stored}")`;
  const schema = SCHEMAS[name];
  return schema === undefined || schema.safeParse(value).success ? undefined : `it is not a valid ${stored} record`;
}
