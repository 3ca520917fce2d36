// Public types of a run's state: scratchpad, final answer, budgets, lifecycle, runs and identity.
import type { CallOptions, Json } from './options.js';

/** This run's working memory. */
export interface Scratchpad {
  variables: Record<string, Json>;
  observations: string[];
  failedApproaches: Array<{ approach: string; reason?: string }>;
  /** a compact text of it for a prompt */
  context: string;
}
/** What a scratchpad holds, by count. */
export interface ScratchpadCounts {
  variables: number;
  observations: number;
  failedApproaches: number;
}
/** The run's scratchpad: `scratchpad_write` and `scratchpad_read` (run_start clears it). */
export interface ScratchpadApi {
  /** `scratchpad_write`: a named variable (set or replaced), an observation, or an approach that failed (text) */
  write: (args: {
    kind: 'variable' | 'observation' | 'failed_approach';
    name?: string;
    value: Json;
    idempotencyKey?: string;
  }) => Promise<ScratchpadCounts & { kind: 'variable' | 'observation' | 'failed_approach'; name?: string }>;
  /** `scratchpad_read` */
  read: () => Promise<Scratchpad>;
}

/** A run's final answer. */
export interface FinalAnswer {
  content: string;
  metadata?: Json;
  thread: string;
  run: string;
  setAt: string;
  setBy: string;
}
/** The final answer: `final_answer_set` and `final_answer_get`. */
export interface FinalAnswerApi {
  /** `final_answer_set`: once per run (MULTIPLE_FINAL_ANSWERS after that) */
  set: (args: { content: string; metadata?: Json; idempotencyKey?: string }) => Promise<{ answer: FinalAnswer }>;
  /** `final_answer_get`: this run's, or a (delegated) thread's; `waitMs` waits for it */
  get: (
    args?: { thread?: string; waitMs?: number },
    options?: CallOptions,
  ) => Promise<{ isSet: boolean; answer?: FinalAnswer; timedOut?: boolean }>;
}

/** One budget of a thread. */
export interface Budget {
  name: string;
  current: number;
  max: number;
  remaining: number;
  reached: boolean;
}
/** Budgets: the `budget_*` tools (configure and increase are the operator's, always available to code). */
export interface BudgetsApi {
  /** `budget_status` */
  status: () => Promise<{ budgets: Budget[] }>;
  /** `budget_step`: spends (parents' too); LIMIT_REACHED spends nothing */
  step: (args?: { name?: string; amount?: number; idempotencyKey?: string }) => Promise<Budget>;
  /** `budget_configure`: sets a thread's stored max */
  configure: (args: { name: string; max: number; thread?: string; idempotencyKey?: string }) => Promise<Budget>;
  /** `budget_increase`: raises a thread's stored max */
  increase: (args: { name: string; amount: number; thread?: string; idempotencyKey?: string }) => Promise<Budget>;
}

/** A run's lifecycle state. */
export type AgentState = 'loading' | 'running' | 'paused' | 'awaiting_user_input' | 'finished' | 'error' | 'stopped';
/** A lifecycle as read: the state and the states allowed next. */
export interface Lifecycle {
  thread: string;
  run: string;
  state: AgentState;
  reason?: string;
  updatedAt?: string;
  allowed: AgentState[];
}
/** The lifecycle: `agent_state_get` and `agent_state_set`. */
export interface LifecycleApi {
  /** `agent_state_get` */
  get: (args?: { thread?: string }) => Promise<Lifecycle>;
  /** `agent_state_set`; INVALID_TRANSITION lists the allowed states */
  set: (args: { state: AgentState; reason?: string; idempotencyKey?: string }) => Promise<Lifecycle & { previous: AgentState }>;
}

/** How a run ends. */
export type EndState = 'finished' | 'error' | 'stopped';
/** Runs: `run_start` and `run_end`. */
export interface RunsApi {
  /** `run_start`: a new run (optionally of another thread); this blackboard serves it from now on */
  start: (args?: {
    thread?: string;
    parentThread?: string;
    agentType?: string;
    idempotencyKey?: string;
  }) => Promise<{ thread: string; run: string; resumed: boolean }>;
  /** `run_end`: also saves a checkpoint */
  end: (args: {
    status: EndState;
    reason?: string;
    idempotencyKey?: string;
  }) => Promise<{ thread: string; run: string; state: AgentState; checkpointId?: string }>;
}

/** This blackboard's identity (`whoami`). */
export interface WhoAmI {
  namespace: string | null;
  agent: string | null;
  agentType: string | null;
  thread: string;
  run: string;
  parentThread: string | null;
  delegateLevel: number;
  /** the thread's lifecycle state */
  state: AgentState;
  /** the thread's budgets */
  budgets: Budget[];
  /** messages not acknowledged yet */
  unread: number;
}
