// Which tools a server registers: the one table of every tool's family and profile, and `--tools` selections.
import { closest } from './tools/argument-errors.js';
import { ProcessCache } from './process-cache.js';

/** Tool families: a family is the set of tools over one kind of record. */
export const FAMILIES = [
  'kv',
  'plan',
  'scratchpad',
  'finalizer',
  'budget',
  'lifecycle',
  'run',
  'checkpoint',
  'history',
  'signal',
  'team',
  'board',
] as const;
export type Family = (typeof FAMILIES)[number];

/**
 * Profiles: `agent` is the default set; every other profile adds its tools to `agent`'s. `all` is every tool.
 * Profiles combine: `--tools planner,follow`.
 */
export const PROFILES = ['agent', 'planner', 'follow', 'history', 'operator', 'team', 'all'] as const;
export type Profile = (typeof PROFILES)[number];

/**
 * Every tool: its family and the profile that brings it. The one place that says which tools a model sees by
 * default. A name listed here that no family declares is simply not registered.
 */
export const TOOL_TABLE: Readonly<Record<string, { family: Family; profile: Exclude<Profile, 'all'>; alsoIn?: Profile[] }>> = {
  state_get: { family: 'kv', profile: 'agent' },
  state_set: { family: 'kv', profile: 'agent' },
  state_update: { family: 'kv', profile: 'agent' },
  state_delete: { family: 'kv', profile: 'agent' },
  state_list: { family: 'kv', profile: 'agent' },
  watch: { family: 'kv', profile: 'agent' },
  plan_create: { family: 'plan', profile: 'agent' },
  plan_get: { family: 'plan', profile: 'agent' },
  plan_list: { family: 'plan', profile: 'agent' },
  plan_claim: { family: 'plan', profile: 'agent' },
  plan_step: { family: 'plan', profile: 'agent' },
  scratchpad_write: { family: 'scratchpad', profile: 'agent' },
  scratchpad_read: { family: 'scratchpad', profile: 'agent' },
  final_answer_set: { family: 'finalizer', profile: 'agent' },
  final_answer_get: { family: 'finalizer', profile: 'agent' },
  budget_step: { family: 'budget', profile: 'agent' },
  whoami: { family: 'run', profile: 'agent' },

  plan_update: { family: 'plan', profile: 'planner' },
  plan_delete: { family: 'plan', profile: 'planner' },

  state_changes: { family: 'kv', profile: 'follow' },
  state_snapshot: { family: 'kv', profile: 'follow' },
  state_batch: { family: 'kv', profile: 'follow' },

  history_append: { family: 'history', profile: 'history' },
  history_list: { family: 'history', profile: 'history' },
  history_prune: { family: 'history', profile: 'history' },
  signal: { family: 'signal', profile: 'history' },

  checkpoint_save: { family: 'checkpoint', profile: 'operator' },
  checkpoint_list: { family: 'checkpoint', profile: 'operator' },
  checkpoint_restore: { family: 'checkpoint', profile: 'operator' },
  checkpoint_delete: { family: 'checkpoint', profile: 'operator' },
  run_start: { family: 'run', profile: 'operator' },
  run_end: { family: 'run', profile: 'operator' },
  agent_state_get: { family: 'lifecycle', profile: 'operator' },
  agent_state_set: { family: 'lifecycle', profile: 'operator' },
  budget_status: { family: 'budget', profile: 'operator' },
  /** registered only with --allow-budget-admin */
  budget_configure: { family: 'budget', profile: 'operator' },
  budget_increase: { family: 'budget', profile: 'operator' },

  team_list: { family: 'team', profile: 'team' },
  message_send: { family: 'team', profile: 'team' },
  inbox: { family: 'team', profile: 'team' },

  board_show: { family: 'board', profile: 'follow', alsoIn: ['operator'] },
  /** only for clients that render MCP Apps, and visible to the app alone */
  board_wait: { family: 'board', profile: 'follow', alsoIn: ['operator'] },
};

/** The tools only an operator started with `--allow-budget-admin` gets. */
export const BUDGET_ADMIN_TOOLS: readonly string[] = ['budget_configure', 'budget_increase'];

/**
 * Checks a `--tools` list (profiles, families and tool names, comma-separated) and returns its items; throws an
 * Error whose message names the unknown item and what is known. Undefined or empty: the `agent` profile.
 */
export function parseToolList(raw: string | undefined): string[] {
  const items = (raw ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  for (const item of items) {
    if (!isProfile(item) && !isFamily(item) && !(item in TOOL_TABLE)) {
      const known = [...PROFILES, ...FAMILIES, ...Object.keys(TOOL_TABLE)];
      const near = closest(item, known) ?? known.find((k) => item.endsWith(`_${k}`));
      throw new Error(
        `unknown tool, family or profile "${item}"${near ? ` (did you mean ${near}?)` : ''}. Profiles: ${PROFILES.join(', ')}; families: ${FAMILIES.join(', ')}; or single tool names.`,
      );
    }
  }
  return items.length > 0 ? items : ['agent'];
}

/**
 * The tool names a selection brings. A profile brings `agent`'s tools and its own; a family all of its tools; a
 * name itself. A name that is both a profile and a family (`history`) is the profile. The budget admin tools come
 * only with `allowBudgetAdmin`.
 */
export function selectTools(items: readonly string[], options: { allowBudgetAdmin?: boolean } = {}): ReadonlySet<string> {
  const admin = options.allowBudgetAdmin === true;
  return SELECTIONS.get(`${items.join(',')}|${admin}`, () => computeSelection(items, admin));
}

/** Selections already worked out (a server is made per stateless request; its `--tools` never changes). */
const SELECTIONS = new ProcessCache<ReadonlySet<string>>();

function computeSelection(items: readonly string[], allowBudgetAdmin: boolean): ReadonlySet<string> {
  const chosen = new Set<string>();
  const tools = Object.entries(TOOL_TABLE);
  for (const item of items.length > 0 ? items : ['agent']) {
    for (const [name, { family, profile, alsoIn }] of tools) {
      const brings = isProfile(item)
        ? item === 'all' || profile === 'agent' || profile === item || alsoIn?.includes(item) === true
        : isFamily(item)
          ? family === item
          : name === item;
      if (brings) chosen.add(name);
    }
  }
  if (!allowBudgetAdmin) for (const name of BUDGET_ADMIN_TOOLS) chosen.delete(name);
  return chosen;
}

/** Whether a selection brings any tool of `family` (a family's services may hook into others, e.g. checkpoints). */
export function familySelected(items: readonly string[], family: Family): boolean {
  return [...selectTools(items, { allowBudgetAdmin: true })].some((name) => TOOL_TABLE[name]?.family === family);
}

function isProfile(item: string): item is Profile {
  return (PROFILES as readonly string[]).includes(item);
}

function isFamily(item: string): item is Family {
  return (FAMILIES as readonly string[]).includes(item);
}
