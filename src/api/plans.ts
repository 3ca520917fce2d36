// Public types of plans and claims.

/** A plan's status. */
export type PlanStatus = 'active' | 'completed' | 'abandoned';
/** A step's status. */
export type StepStatus = 'pending' | 'in_progress' | 'completed' | 'blocked' | 'skipped';
/** One step of a plan. */
export interface Step {
  id: string;
  content: string;
  status: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
}
/** A plan: a title, a status and ordered steps with stable ids. */
export interface Plan {
  planId: string;
  title: string;
  status: PlanStatus;
  scope: string;
  steps: Step[];
  version: number;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
}
/** A new step: its text, or the text with an owner, the step ids it waits for and a note. */
export type NewStep = string | { content: string; owner?: string; blockedBy?: string[]; note?: string };
/** `plan_create`; steps get ids `s1`, `s2`, …. */
export interface PlanCreateArgs {
  title: string;
  steps: NewStep[];
  scope?: string;
  idempotencyKey?: string;
}
/** `plan_list`, latest first. */
export interface PlanListArgs {
  status?: PlanStatus;
  scope?: string;
  limit?: number;
}
/** A plan as listed: without steps, with counts. */
export type PlanSummary = Omit<Plan, 'steps'> & { stepCount: number; doneCount: number };
/** `plan_update`: title, status, the step list, or single steps (`null` clears a field). */
export interface PlanUpdateArgs {
  planId: string;
  ifVersion?: number;
  title?: string;
  status?: PlanStatus;
  steps?: Array<string | { id?: string; content: string; status?: StepStatus; owner?: string; blockedBy?: string[]; note?: string }>;
  stepUpdates?: Array<{ id: string; content?: string; status?: StepStatus; owner?: string | null; blockedBy?: string[] | null; note?: string | null }>;
  idempotencyKey?: string;
}
/** `plan_claim`: the named step, or the next free one whose blockers are done. */
export interface PlanClaimArgs {
  planId: string;
  stepId?: string;
  owner?: string;
  idempotencyKey?: string;
}
/** Why a claim took nothing. */
export type ClaimReason = 'all_done' | 'all_blocked' | 'all_taken' | 'taken';
/** The step taken, or `claimed: false` and why. */
export interface PlanClaimResult {
  claimed: boolean;
  step?: Step;
  reason?: ClaimReason;
}

/** Plans with claims: the `plan_*` tools. Watch a plan with `kv.watch({key: planId, scope: 'plan'})`. */
export interface PlansApi {
  /** `plan_create` */
  create: (args: PlanCreateArgs) => Promise<{ planId: string; plan: Plan }>;
  /** `plan_get` */
  get: (args: { planId: string }) => Promise<{ plan: Plan }>;
  /** `plan_list` */
  list: (args?: PlanListArgs) => Promise<{ plans: PlanSummary[]; truncated: boolean }>;
  /** `plan_update` */
  update: (args: PlanUpdateArgs) => Promise<{ plan: Plan }>;
  /** `plan_claim`: atomic; two claimers never get one step */
  claim: (args: PlanClaimArgs) => Promise<PlanClaimResult>;
  /** `plan_delete` */
  delete: (args: { planId: string; ifVersion?: number; idempotencyKey?: string }) => Promise<{ deleted: boolean }>;
}
