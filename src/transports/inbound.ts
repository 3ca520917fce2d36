// What a connection's inbound messages tell the server beyond what the SDK does with them: the 2026-07-28
// `subscriptions/listen` streams to feed from the store (once a client listens, every change of the namespace, through
// any process, is sent as a resource update, and the SDK delivers those its streams name), and a 2026-07-28 client's
// name, which comes in each request's `_meta` (it sends no `initialize`).
import { CLIENT_INFO_META_KEY, type JSONRPCMessage, type McpServer, type Transport } from '@modelcontextprotocol/server';
import { StoreEventBus } from '../resource-bus.js';
import { DEFAULT_NAMESPACE_URI, listenRefusal } from '../resources.js';
import type { VersionedStore } from '../store/versioned-store.js';

/** Why an inbound message is refused, as the JSON-RPC error to answer it with. */
export type Refusal = { code: number; message: string };

export interface ListenFollower {
  /** Sees an inbound message: a listen of valid URIs starts following the namespace; a malformed one is refused. */
  inbound(message: JSONRPCMessage): Refusal | undefined;
  stop(): void;
}

/** Follows `namespace` for the listen streams of the connection whose server `current` returns. */
export function followListens(store: VersionedStore, namespace: string | undefined, current: () => McpServer | undefined): ListenFollower {
  const bus = new StoreEventBus(store);
  bus.subscribe((event) => {
    if (event.kind === 'resource_updated')
      void current()
        ?.server.sendResourceUpdated({ ...event.params, uri: event.uri })
        .catch(() => {});
  });
  return {
    inbound(message) {
      if (!('method' in message) || message.method !== 'subscriptions/listen') return undefined;
      const refused = listenRefusal(message.params, namespace ?? DEFAULT_NAMESPACE_URI);
      if (!refused) void bus.follow(namespace);
      return refused;
    },
    stop: () => bus.stop(),
  };
}

/** The client's name a request carries in its `_meta` (a 2026-07-28 client's), cut to 200 characters. */
export function clientNameIn(message: JSONRPCMessage): string | undefined {
  if (!('method' in message)) return undefined;
  const info = message.params?._meta?.[CLIENT_INFO_META_KEY] as { name?: unknown } | undefined;
  return typeof info?.name === 'string' ? info.name.slice(0, 200) : undefined;
}

/**
 * `transport` with `inbound` seeing every message before the server does (the transport a caller brings, which this
 * server cannot extend as it does its own stdio one): a request it refuses is answered with that error instead.
 */
export function withInbound(transport: Transport, inbound: (message: JSONRPCMessage) => Refusal | undefined): Transport {
  return new Proxy(transport, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' && property !== 'onmessage' ? value.bind(target) : value;
    },
    set(target, property, value) {
      if (property !== 'onmessage' || typeof value !== 'function') return Reflect.set(target, property, value, target);
      const deliver = value as NonNullable<Transport['onmessage']>;
      target.onmessage = (message, extra) => {
        const refused = inbound(message);
        if (refused && 'id' in message && 'method' in message) {
          void target.send({ jsonrpc: '2.0', id: message.id, error: refused }).catch(() => {});
          return;
        }
        deliver(message, extra);
      };
      return true;
    },
  });
}
