// Tool arguments as models send them: nulls for "not given" and numbers as strings accepted, and schema errors
// reported all at once (up to 5), each naming the argument, a likely name for a typo and, for a union, the closest form.
import * as z from 'zod';
import { truncate } from '../context.js';
import { BlackboardError } from '../errors.js';
import { editDistance } from '../edit-distance.js';

/** Schema problems reported per call. */
const MAX_ISSUES = 5;
const NUMERIC = /^\s*-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/**
 * Arguments made ready for the strict schema, without changing their meaning: an optional argument sent as `null`
 * (what strict tool-calling bridges send for "not given") is dropped unless the argument itself accepts null, and a
 * numeric string where a number is expected (`"3"`) becomes the number. `args` itself is not changed.
 */
export function prepareArgs(schema: z.ZodType, args: unknown): unknown {
  const s = unwrap(schema);
  if (s instanceof z.ZodNumber && typeof args === 'string' && NUMERIC.test(args)) return Number(args);
  if (s instanceof z.ZodArray && Array.isArray(args)) return args.map((item) => prepareArgs(s.element as z.ZodType, item));
  if (s instanceof z.ZodUnion && args !== null && typeof args === 'object') {
    for (const option of s.options as z.ZodType[]) {
      const prepared = prepareArgs(option, args);
      if (option.safeParse(prepared).success) return prepared;
    }
    return args;
  }
  if (s instanceof z.ZodObject && args !== null && typeof args === 'object' && !Array.isArray(args)) {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(args)) {
      const prop = (s.shape as Record<string, z.ZodType>)[key];
      if (prop === undefined) out[key] = value;
      else if (value === null && prop.safeParse(undefined).success && !prop.safeParse(null).success) continue;
      else out[key] = prepareArgs(prop, value);
    }
    return out;
  }
  return args;
}

interface Problem {
  path: string;
  message: string;
  suggestion?: string;
}

/**
 * Every way (up to 5) `args` breaks `schema`, as one INVALID_ARGUMENT: the message states each problem (and how many
 * there are in all when there are more), `details.path` is the first one's argument, `details.issues` lists those
 * reported, `details.suggestion` a likely name for a typo.
 */
export function argumentError(error: z.ZodError, schema: z.ZodType, args: unknown): BlackboardError {
  const all = error.issues.flatMap((issue) => describeIssue(issue, [], schema, args));
  const problems = all.slice(0, MAX_ISSUES);
  const [first] = problems;
  // More than are reported: the message says how many there are, so none passes for fixed after one round trip.
  const count = all.length > problems.length ? `${all.length} problems (first ${problems.length})` : `${problems.length} problems`;
  const message = problems.length === 1 ? first.message : `${count}: ${problems.map((p) => p.message).join(' ')}`;
  return new BlackboardError('INVALID_ARGUMENT', message, {
    path: first.path,
    ...(first.suggestion ? { suggestion: first.suggestion } : {}),
    issues: problems.map(({ path, message: text }) => ({ path, message: text })),
  });
}

function describeIssue(issue: z.core.$ZodIssue, base: PropertyKey[], schema: z.ZodType, args: unknown): Problem[] {
  const at = [...base, ...issue.path];
  if (issue.code === 'unrecognized_keys') {
    const known = Object.keys(objectAt(schema, at)?.shape ?? {});
    return issue.keys.map((key) => {
      const path = pathText([...at, key]);
      const suggestion = closest(key, known) ?? qualified(key, known);
      const where = known.length > 0 ? `Arguments here: ${known.join(', ')}.` : 'It takes no arguments here.';
      return {
        path,
        message: `Unknown argument "${path}"${suggestion ? `: did you mean ${suggestion}?` : '.'} ${where}`,
        ...(suggestion ? { suggestion } : {}),
      };
    });
  }
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    // The branch the input came closest to: fewest problems, and not refused outright for its type.
    const score = (branch: z.core.$ZodIssue[]): number =>
      branch.length + (branch.some((i) => i.path.length === 0 && i.code === 'invalid_type') ? 100 : 0);
    let best = 0;
    issue.errors.forEach((branch, i) => {
      if (score(branch) < score(issue.errors[best])) best = i;
    });
    const union = unwrap(schemaAt(schema, at) ?? z.never());
    const option = union instanceof z.ZodUnion ? (union.options as z.ZodType[])[best] : undefined;
    const form = option ? formOf(option) : `form ${best + 1}`;
    const inner = issue.errors[best].flatMap((i) => describeIssue(i, at, schema, args));
    const path = pathText(at);
    return [
      {
        path,
        message: `${path || 'The arguments'} is not valid as ${form} (the closest of its forms): ${inner.map((p) => p.message).join(' ')}`,
      },
    ];
  }
  const path = pathText(at);
  const value = valueAt(args, at);
  let what: string;
  if (value === undefined) what = 'is required';
  else if (issue.code === 'invalid_type' && issue.expected === 'int' && typeof value === 'number')
    what = `must be a whole number, not ${value}`;
  else if (issue.code === 'invalid_type')
    what = `must be ${issue.expected === 'int' ? 'a whole number' : article(issue.expected)}, not ${typeName(value)}`;
  else if (issue.code === 'invalid_value') what = `must be one of: ${issue.values.map((v) => String(v)).join(', ')}`;
  else if (issue.code === 'too_small' || issue.code === 'too_big')
    what = `is out of range: ${issue.message.replace(/^Too (small|big): /, '')}`;
  else what = `is not valid: ${issue.message}`;
  return [{ path, message: `${path || 'The arguments'} ${what}.` }];
}

/** A union branch in words: `a string`, `an object {content, owner?}`. */
function formOf(schema: z.ZodType): string {
  const s = unwrap(schema);
  if (s instanceof z.ZodObject) {
    const fields = Object.entries(s.shape as Record<string, z.ZodType>).map(([k, v]) => (v.safeParse(undefined).success ? `${k}?` : k));
    return `an object {${fields.join(', ')}}`;
  }
  if (s instanceof z.ZodArray) return 'an array';
  return article(s.type);
}

function article(type: string): string {
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault) s = s.unwrap() as z.ZodType;
  return s;
}

/** A path as messages name it (each name cut to its first 80 characters: a made-up one is not echoed whole). */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${truncate(String(p))}`)).join('');
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const p of path) at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[p] : undefined;
  return at;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${article(typeof value)} (${String(value)})`;
}

/** The schema reached by following `path` (through optional, nullable, array and union wrappers). */
function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  const objects = (s: z.ZodType): z.ZodObject[] => {
    const u = unwrap(s);
    if (u instanceof z.ZodObject) return [u];
    if (u instanceof z.ZodUnion) return (u.options as z.ZodType[]).flatMap(objects);
    return [];
  };
  let at: z.ZodType | undefined = schema;
  for (const p of path) {
    if (!at) return undefined;
    if (typeof p === 'number') {
      const s = unwrap(at);
      at = s instanceof z.ZodArray ? (s.element as z.ZodType) : undefined;
    } else {
      at = objects(at)
        .map((o) => (o.shape as Record<string, z.ZodType>)[String(p)])
        .find(Boolean);
    }
  }
  return at;
}

function objectAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodObject | undefined {
  const at = schemaAt(schema, path);
  if (!at) return undefined;
  const s = unwrap(at);
  if (s instanceof z.ZodObject) return s;
  if (s instanceof z.ZodUnion) return (s.options as z.ZodType[]).map(unwrap).find((o): o is z.ZodObject => o instanceof z.ZodObject);
  return undefined;
}

/** The known name closest to a misspelled one (case, `_` and `-` ignored; a few edits at most). */
export function closest(name: string, known: string[]): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[_-]/g, '');
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(norm(name), norm(candidate));
    if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && (!best || distance < best.distance))
      best = { name: candidate, distance };
  }
  return best?.name;
}

/**
 * The known name a longer one qualifies: `stepId` or `step_id` for `id`, `newStatus` for `status` (the name a sibling
 * tool gives the same thing, such as plan_step's `stepId` for a step update's `id`).
 */
function qualified(name: string, known: string[]): string | undefined {
  return known.find((k) => name.endsWith(`${k[0].toUpperCase()}${k.slice(1)}`) || name.endsWith(`_${k}`));
}

/**
 * The registered tool a call probably meant: the same name with or without the namespace prefix, else the closest
 * spelling.
 */
export function closestTool(name: string, registered: string[], namespace: string | undefined): string | undefined {
  const prefix = namespace ? `${namespace}_` : '';
  const exact = registered.find((r) => r === `${prefix}${name}` || (prefix && r === name.replace(/^[a-z][a-z0-9_]*?_(?=[a-z]+_)/, prefix)));
  const unprefixed = registered.find((r) => name.endsWith(`_${r.slice(prefix.length)}`) && r.length > prefix.length);
  return exact ?? unprefixed ?? closest(name.startsWith(prefix) ? name : `${prefix}${name}`, registered);
}
