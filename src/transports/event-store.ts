// The SSE events of this process's HTTP sessions, kept a few minutes so a client that lost its stream can resume it.
import { randomUUID } from 'node:crypto';
import type { EventId, EventStore, JSONRPCMessage, StreamId } from '@modelcontextprotocol/server';

/** Bounds of an {@link EventLog}: it forgets the oldest events beyond any of them. */
export interface EventLogLimits {
  /** most events kept, all sessions together */
  maxEvents: number;
  /** most bytes of JSON kept, all sessions together */
  maxBytes: number;
  /** how long an event can be replayed */
  ttlMs: number;
}

export const DEFAULT_EVENT_LIMITS: EventLogLimits = { maxEvents: 20_000, maxBytes: 64 * 1024 * 1024, ttlMs: 5 * 60_000 };

/** The {@link EventStore} of one HTTP session; `dispose()` drops its events when the session closes. */
export interface SessionEventStore extends EventStore {
  dispose(): void;
}

interface StoredEvent {
  id: EventId;
  /** the session's stream key: session tag + stream id (the SDK reuses one stream id for every session's GET stream) */
  stream: string;
  streamId: StreamId;
  message: JSONRPCMessage;
  bytes: number;
  at: number;
}

/**
 * Every SSE event sent by the sessions of this process, oldest first, bounded in count, bytes and age. HTTP sessions
 * live in the process that created them (a load balancer routes by `Mcp-Session-Id`), so the events that resume them
 * live here too. A session sees only its own events: an event id from another session is unknown to it.
 */
export class EventLog {
  private readonly events = new Map<EventId, StoredEvent>();
  private readonly streams = new Map<string, EventId[]>();
  private bytes = 0;
  private seq = 0;

  constructor(
    readonly limits: EventLogLimits = DEFAULT_EVENT_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** How many events and bytes are kept now. */
  get size(): { events: number; bytes: number } {
    return { events: this.events.size, bytes: this.bytes };
  }

  /** A store for one session. */
  forSession(): SessionEventStore {
    const tag = randomUUID();
    const mine = (id: EventId): StoredEvent | undefined => {
      this.expire();
      const event = this.events.get(id);
      return event?.stream.startsWith(`${tag}/`) ? event : undefined;
    };
    return {
      storeEvent: async (streamId, message) => this.add(`${tag}/${streamId}`, streamId, message),
      getStreamIdForEventId: async (id) => mine(id)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const last = mine(lastEventId);
        if (!last) throw new Error(`Unknown or expired event id ${lastEventId}.`);
        const ids = this.streams.get(last.stream) ?? [];
        for (const id of ids.slice(ids.indexOf(lastEventId) + 1)) {
          const event = this.events.get(id);
          // the empty message is the SDK's priming event: it only carries an id
          if (event && Object.keys(event.message).length > 0) await send(id, event.message);
        }
        return last.streamId;
      },
      dispose: () => {
        for (const [stream, ids] of this.streams) {
          if (!stream.startsWith(`${tag}/`)) continue;
          for (const id of ids) this.drop(id, false);
          this.streams.delete(stream);
        }
      },
    };
  }

  private add(stream: string, streamId: StreamId, message: JSONRPCMessage): EventId {
    const id = `${++this.seq}.${randomUUID().slice(0, 8)}`;
    const bytes = Buffer.byteLength(JSON.stringify(message));
    this.expire();
    while (this.events.size > 0 && (this.events.size >= this.limits.maxEvents || this.bytes + bytes > this.limits.maxBytes)) {
      this.drop(this.events.keys().next().value!, true);
    }
    this.events.set(id, { id, stream, streamId, message, bytes, at: this.now() });
    this.bytes += bytes;
    const ids = this.streams.get(stream);
    if (ids) ids.push(id);
    else this.streams.set(stream, [id]);
    return id;
  }

  private expire(): void {
    const cutoff = this.now() - this.limits.ttlMs;
    for (const event of this.events.values()) {
      if (event.at > cutoff) break;
      this.drop(event.id, true);
    }
  }

  /** Forgets one event; `oldest` = it is the first of its stream (eviction and expiry go oldest first). */
  private drop(id: EventId, oldest: boolean): void {
    const event = this.events.get(id);
    if (!event) return;
    this.events.delete(id);
    this.bytes -= event.bytes;
    if (!oldest) return;
    const ids = this.streams.get(event.stream);
    ids?.shift();
    if (ids?.length === 0) this.streams.delete(event.stream);
  }
}
