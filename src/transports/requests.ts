// What an HTTP request may ask for: where it comes from (Host, Origin), the namespace of its path, and who it is.
import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../config.js';
import { nameRule, namespaceError } from '../context.js';
import { LOOPBACK_HOSTNAMES } from '../hosts.js';
import { HttpError } from '../http-error.js';
import type { SessionOptions } from '../services/session.js';
import { allowsNamespace, type Principal } from './auth.js';

export { HttpError } from '../http-error.js';
export { isLoopbackAddress, LOOPBACK_HOSTNAMES } from '../hosts.js';

/** Refuses a request sent by a web page of another site: its `Origin`, when present, must be loopback or allowed. */
export function checkOrigin(headers: IncomingHttpHeaders, allowedOrigins: string[]): void {
  const origin = headers.origin;
  if (origin === undefined) return;
  if (allowedOrigins.includes(origin)) return;
  let hostname: string | undefined;
  try {
    hostname = new URL(origin).hostname;
  } catch {
    hostname = undefined;
  }
  if (hostname === undefined || !LOOPBACK_HOSTNAMES.includes(hostname)) {
    throw new HttpError(
      403,
      `Forbidden: requests from the web origin ${origin} are refused; the operator can allow it with --allowed-origins.`,
    );
  }
}

/**
 * The MCP endpoint a path names: `/mcp` serves the configured namespace, `/mcp/NS` namespace NS. Returns undefined
 * for a path that is not an MCP endpoint.
 */
export function endpointOf(path: string, configured: string | undefined): { namespace?: string } | undefined {
  const m = /^\/mcp(?:\/([^/]*))?\/?$/.exec(path);
  if (!m) return undefined;
  let ns: string | undefined;
  try {
    ns = m[1] ? decodeURIComponent(m[1]) : undefined;
  } catch {
    throw new HttpError(
      404,
      'Not found: the namespace in the path is not valid percent-encoding. The MCP endpoints are /mcp and /mcp/NAMESPACE.',
    );
  }
  if (ns === undefined) return { namespace: configured };
  const bad = namespaceError('the namespace', ns);
  if (bad) throw new HttpError(404, `Not found: ${bad} The MCP endpoints are /mcp and /mcp/NAMESPACE.`);
  return { namespace: ns };
}

/**
 * What a new session is: its identity (from the auth file's client, the identity headers and the flags) and access;
 * `agentTypeFixed` when the auth file sets the client's agent type, so that a request's `_meta` may not name another.
 */
export type NewSession = SessionOptions & { readOnly: boolean };

/**
 * The identity of a session opened by `initialize`, from its `X-Blackboard-*` headers. With an auth file the client's
 * agent is its identity: a different `X-Blackboard-Agent` (or `-Agent-Type`, when the file sets one) is refused, and
 * so is a namespace the client was not given.
 */
export function sessionIdentity(
  headers: IncomingHttpHeaders,
  principal: Principal,
  namespace: string | undefined,
  config: Config,
): NewSession {
  const header = (name: string, what: string): string | undefined => {
    const value = headers[`x-blackboard-${name}`];
    if (value === undefined) return undefined;
    const rule = nameRule(what.toLowerCase());
    if (typeof value !== 'string' || !rule.re.test(value)) {
      throw new HttpError(400, `Bad request: X-Blackboard-${what} must be ${rule.words}.`);
    }
    return value;
  };
  const thread = header('thread', 'Thread') ?? config.thread;
  const parentThread = header('parent-thread', 'Parent-Thread') ?? config.parentThread;
  const agent = header('agent', 'Agent');
  const agentType = header('agent-type', 'Agent-Type');
  const client = principal.client;
  if (!client) {
    return { namespace, agent: agent ?? config.agent, agentType: agentType ?? config.agentType, thread, parentThread, readOnly: false };
  }
  if (agent !== undefined && agent !== client.agent) {
    throw new HttpError(
      403,
      `Forbidden: this token belongs to agent "${client.agent}"; it cannot act as "${agent}". Drop X-Blackboard-Agent or use that agent's token.`,
    );
  }
  if (agentType !== undefined && client.agentType !== undefined && agentType !== client.agentType) {
    throw new HttpError(403, `Forbidden: this token's agent type is "${client.agentType}"; it cannot act as "${agentType}".`);
  }
  if (!allowsNamespace(client, namespace)) {
    const where = namespace === undefined ? 'the default namespace (/mcp)' : `namespace "${namespace}"`;
    throw new HttpError(403, `Forbidden: agent "${client.agent}" may not use ${where}; it may use: ${client.namespaces.join(', ')}.`);
  }
  return {
    namespace,
    agent: client.agent,
    agentType: client.agentType ?? agentType ?? config.agentType,
    thread,
    parentThread,
    readOnly: client.access === 'read',
    ...(client.agentType !== undefined ? { agentTypeFixed: true } : {}),
  };
}
