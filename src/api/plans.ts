// Public types of plans and claims.

/** A plan's status. */
export type PlanStatus = 'active' | 'completed' | 'abandoned';
/** A step's status. */
export type StepStatus = 'pending' | 'in_progress' | 'completed' | 'blocked' | 'skipped';
/** A step's live claim: its holder's thread, the fence of the grant and until when it holds without a sign of life. */
export interface StepClaim {
  thread: string;
  fence: number;
  leaseUntil: string;
}
/** One step of a plan (`content` cut to 200 characters unless `detail: 'full'` was asked). */
export interface Step {
  id: string;
  content: string;
  status: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
  /** how many claims of this step lapsed */
  attempts?: number;
  claim?: StepClaim;
}
/** A plan: a title, a status and ordered steps with stable ids, with its done and total counts. */
export interface Plan {
  planId: string;
  title: string;
  status: PlanStatus;
  scope: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
  done: number;
  total: number;
  steps: Step[];
}
/** A new step: its text, or the text with a status (`in_progress` makes it the caller's claim), owner, blockers, note. */
export type NewStep = string | { content: string; status?: StepStatus; owner?: string; blockedBy?: string[]; note?: string };
/** `plan_create`; steps get ids `s1`, `s2`, …. Plans default to the global scope. */
export interface PlanCreateArgs {
  title: string;
  steps: NewStep[];
  scope?: string;
  idempotencyKey?: string;
}
/** `plan_list`: newest first; without `scope`, every plan the caller can see. */
export interface PlanListArgs {
  status?: PlanStatus;
  scope?: string;
  cursor?: string;
  limit?: number;
}
/** A plan as listed: without steps, with counts. */
export type PlanSummary = Omit<Plan, 'steps' | 'createdAt' | 'updatedBy'>;
/** What a plan write answers: id, version, the steps it changed and counts, never the whole plan. */
export interface PlanWrite {
  planId: string;
  version: number;
  status: PlanStatus;
  changed: Step[];
  removed?: string[];
  done: number;
  total: number;
  unblocked: string[];
}
/**
 * `plan_update`: title, status, the step list (replace: needs `ifVersion`, keeps matched steps, never drops one in
 * progress or completed), or single steps (`""` or `[]` clears a field, `null` is the same as leaving it out; `owner`
 * reassigns a claimed step).
 */
export interface PlanUpdateArgs {
  planId: string;
  ifVersion?: number;
  title?: string;
  status?: PlanStatus;
  steps?: Array<string | { id?: string; content: string; status?: StepStatus; owner?: string; blockedBy?: string[]; note?: string }>;
  stepUpdates?: Array<{
    id: string;
    content?: string;
    status?: StepStatus;
    /** `""` clears it */
    owner?: string | null;
    /** `[]` clears it */
    blockedBy?: string[] | null;
    /** `""` clears it */
    note?: string | null;
  }>;
  idempotencyKey?: string;
}
/** `plan_claim`: the named step, or the next free one whose blockers are done. */
export interface PlanClaimArgs {
  planId: string;
  stepId?: string;
  idempotencyKey?: string;
}
/** Why a claim took nothing. */
export type ClaimReason = 'all_done' | 'all_blocked' | 'all_taken' | 'taken';
/** The step taken with its claim's fence and lease, or `claimed: false` and why. */
export interface PlanClaimResult {
  claimed: boolean;
  step?: Step;
  claim?: { fence: number; leaseUntil: string };
  reason?: ClaimReason;
}
/** `plan_step`: the holder moves its step (`pending` gives it back); `fence` makes the call strict. */
export interface PlanStepArgs {
  planId: string;
  stepId: string;
  status: 'in_progress' | 'completed' | 'skipped' | 'pending';
  note?: string;
  fence?: number;
  idempotencyKey?: string;
}
/** What `plan_step` answers: the step, counts, and the steps it unblocked. */
export interface PlanStepResult {
  planId: string;
  version: number;
  step: Step;
  done: number;
  total: number;
  unblocked: string[];
}

/** Plans with claims: the `plan_*` tools. Watch a plan with `kv.watch({key: planId, scope: 'plan'})`. */
export interface PlansApi {
  /** `plan_create` */
  create: (
    args: PlanCreateArgs,
  ) => Promise<{ planId: string; version: number; scope: string; stepIds: string[]; done: number; total: number }>;
  /**
   * `plan_get`: a summary of each step unless `detail: 'full'`. A summary stays under about 16 KiB: a longer one holds
   * the first steps, and `nextCursor` (a step id, passed as `cursor`) reads on from the first step it left out.
   */
  get: (args: { planId: string; detail?: 'summary' | 'full'; cursor?: string }) => Promise<{ plan: Plan; nextCursor?: string }>;
  /** `plan_list` */
  list: (args?: PlanListArgs) => Promise<{ plans: PlanSummary[]; nextCursor?: string; hint?: string }>;
  /** `plan_update` */
  update: (args: PlanUpdateArgs) => Promise<PlanWrite>;
  /** `plan_claim`: atomic and fenced; two holders never hold one step, a claim lapses when its holder stops */
  claim: (args: PlanClaimArgs) => Promise<PlanClaimResult>;
  /** `plan_step`: only the holder moves its step (FORBIDDEN for others, CLAIM_LOST for a superseded holder) */
  step: (args: PlanStepArgs) => Promise<PlanStepResult>;
  /** `plan_delete` */
  delete: (args: { planId: string; ifVersion?: number; idempotencyKey?: string }) => Promise<{ deleted: boolean }>;
}
