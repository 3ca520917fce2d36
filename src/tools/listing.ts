// How a tool is shown in tools/list: its schemas as compact JSON Schema, and only the annotations that say something.
import type { ToolAnnotations } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { ANY_JSON } from './common.js';

/**
 * Annotations as listed: only what differs from MCP's defaults (not read-only, destructive, not idempotent, open
 * world), so a hint shown is a hint meant; a read-only tool needs no destructive or idempotent hint.
 */
export function compactAnnotations(annotations: ToolAnnotations): ToolAnnotations {
  const { readOnlyHint, destructiveHint, idempotentHint, ...rest } = annotations;
  return {
    ...rest,
    ...(readOnlyHint ? { readOnlyHint } : {}),
    ...(!readOnlyHint && destructiveHint === false ? { destructiveHint } : {}),
    ...(!readOnlyHint && idempotentHint ? { idempotentHint } : {}),
    openWorldHint: false,
  };
}

/**
 * A zod schema as JSON Schema for tools/list: no `$schema` line, and no ±(2^53-1) bounds (what an unbounded integer
 * carries): a bound shown is a real one. Argument objects keep `additionalProperties: false` (unknown arguments are
 * refused); result objects leave it out.
 */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, {
    target: 'draft-7',
    io,
    override: ({ jsonSchema: node, path }) => {
      if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
      if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
      // A result never has properties beyond its schema's; saying so in every object is noise. An argument object
      // with declared properties refuses others all the same; strict converters add the flag themselves, and only
      // an empty object needs it to convert (strict mode refuses an open object without properties).
      const declared = node.properties !== undefined && Object.keys(node.properties).length > 0;
      if ((io === 'output' || declared) && node.additionalProperties === false) delete node.additionalProperties;
      // A result's word lists (statuses, kinds) are named in the descriptions; listing them in every result schema
      // would cost each model turn tokens for what no client validates against.
      if (io === 'output' && node.type === 'string' && Array.isArray(node.enum)) delete node.enum;
      // An argument that takes an object or, for short, a text (a plan step) is shown as the object alone: OpenAI's
      // strict conversion refuses a union with an object whose properties are optional, and would leave the tool
      // non-strict. The text form stays accepted, and the argument's description says so.
      if (io === 'input' && Array.isArray(node.anyOf) && node.anyOf.length === 2) {
        const [text, object] = node.anyOf as Array<Record<string, unknown>>;
        if (JSON.stringify(text) === '{"type":"string"}' && object.type === 'object') {
          delete node.anyOf;
          Object.assign(node, object);
        }
      }
      // object keys are strings in JSON: a record's `propertyNames: {type: string}` says nothing
      if (node.propertyNames !== undefined && JSON.stringify(node.propertyNames) === '{"type":"string"}') delete node.propertyNames;
      // a result's any-JSON value needs no words (an argument's keeps them: converters want every property described)
      if (io === 'output' && node.description === ANY_JSON) delete node.description;
      // a nested result object is told by its properties (the result itself stays `type: object`, as MCP asks)
      if (io === 'output' && node.type === 'object' && node.properties !== undefined && path.length > 0) delete node.type;
    },
  }) as Record<string, unknown>;
  delete out.$schema;
  if (io === 'output') dropNestedRequired(out.properties);
  return out;
}

/**
 * Drops `required` below a result's top level: a result's own fields keep it, the objects inside them (steps,
 * entries, budgets) are described by their properties alone, which keeps every model turn's tool list small.
 */
function dropNestedRequired(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) dropNestedRequired(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  if (Array.isArray(record.required)) delete record.required;
  for (const value of Object.values(record)) dropNestedRequired(value);
}
