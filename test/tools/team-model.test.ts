// A model-based test of team mail: seeded steps of sends (to a name, `agentType:T`, `thread:ID`, `all`, kept with
// waitForRecipient for names, types and threads that have not arrived, idempotent retries, several senders at once),
// inbox reads with and without ack (old cursors included), blocking inboxes woken from another process, and agents
// restarting in the same or a new thread — in-process agents on their own store connections, and a stdio server
// process killed with kill -9, now and then in the middle of a send — on every shared backend. After every step each
// live agent's inbox and every roster entry's unread count match a model of every mailbox: each message reached
// exactly the recipients its reply counted, once, in send order, and no acknowledged position went back.
import { describe, expect, it } from 'vitest';
import { keysOf } from '../../src/keyspace.js';
import { openBackend } from '../../src/store/open.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { type Agent, connect, sleep, spawnAgent, type ToolError } from '../helpers.js';
import { closedAfterEachTest, rng } from '../model.js';
import { sharedStores } from '../stores.js';

const closing = closedAfterEachTest();

// `BLACKBOARD_TEAM_MODEL=full`: 5 seeds of 150 steps per backend; by default 1 of 30
const FULL = process.env.BLACKBOARD_TEAM_MODEL === 'full';
const SEEDS = FULL ? [1, 2, 3, 4, 5] : [1];
const STEPS = FULL ? 150 : 30;

/** An agent of the team: in this process (its own store connection, as another process would have) or a stdio server. */
interface Member {
  name: string;
  type: string;
  spawned: boolean;
  /** its thread is `${name}-${n}` */
  n: number;
  agent?: Agent;
  stop?: (kill: boolean) => Promise<void>;
  /** cursors its inbox replies gave, oldest first (kept across restarts, as an agent that saved them would) */
  cursors: string[];
}
const threadOf = (m: Member): string => `${m.name}-${m.n}`;
const entryId = (name: string, thread: string): string => `${name} ${thread}`;
type Entry = { name: string; thread: string; type: string };
type Resolved = { recipients: number; awaiting?: string; deliver: (seq: number) => void } | undefined;
const errorOf = (reply: { content: unknown[] }): ToolError => JSON.parse((reply.content[0] as { text: string }).text).error as ToolError;

describe.each(sharedStores().map((s) => [s.name, s] as const))('team mail against a model on %s', (_name, spec) => {
  it.each(SEEDS)(
    'seed %i: every message reaches exactly its counted recipients, once, in order; acks never go back',
    async (seed) => {
      const r = rng(seed);
      const int = (n: number) => Math.floor(r() * n);
      const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
      const log: string[] = [];
      const note = (line: string) => {
        log.push(line);
        if (log.length > 40) log.shift();
      };
      const url = spec.fresh();
      const openStore = async (): Promise<VersionedStore> => {
        // on Postgres, one pooled connection: a reader's mailboxes are read one after the other while others send
        const store = new VersionedStore(await openBackend(spec.name === 'postgres' ? `${url}&pool_max=1` : url), { sweepIntervalMs: 0 });
        closing.push(() => store.close());
        return store;
      };
      const probe = await openStore();

      // the model
      const roster = new Map<string, Entry>();
      const agentMail = new Map<string, number[]>(); // by agent name: mail to the name, its type, `all`
      const threadMail = new Map<string, number[]>(); // by entry: mail to `thread:ID`
      const kept = new Map<string, number[]>(); // `a.NAME`, `t.THREAD`, `y.TYPE`: kept for who has not arrived
      const agentPos = new Map<string, number>();
      const threadPos = new Map<string, number>();
      const sent = new Map<number, { from: string; fromThread: string; to: string; content: string }>();
      let lastSeq = 0;
      let serial = 0;
      const push = (map: Map<string, number[]>, key: string, seq: number) => map.set(key, [...(map.get(key) ?? []), seq]);
      const pending = (name: string, thread: string, type: string): number[] => {
        const tp = threadPos.get(entryId(name, thread)) ?? 0;
        const ap = Math.max(tp, agentPos.get(name) ?? 0);
        const seqs = new Set<number>();
        for (const s of [...(threadMail.get(entryId(name, thread)) ?? []), ...(kept.get(`t.${thread}`) ?? [])]) if (s > tp) seqs.add(s);
        for (const s of [...(agentMail.get(name) ?? []), ...(kept.get(`a.${name}`) ?? []), ...(kept.get(`y.${type}`) ?? [])])
          if (s > ap) seqs.add(s);
        return [...seqs].sort((a, b) => a - b);
      };
      const acked = (name: string, thread: string, cursor: number) => {
        const id = entryId(name, thread);
        threadPos.set(id, Math.max(threadPos.get(id) ?? 0, cursor));
        agentPos.set(name, Math.max(agentPos.get(name) ?? 0, cursor));
      };
      /** Whom a send reaches by the roster now (undefined: NOT_FOUND, nothing sent). */
      const resolve = (from: Member, to: string, wait: boolean): Resolved => {
        const [kind, name] = to === 'all' ? ['all', ''] : to.includes(':') ? to.split(':') : ['agent', to];
        const hits = [...roster.values()].filter((e) =>
          kind === 'agent'
            ? e.name === name
            : kind === 'thread'
              ? e.thread === name
              : kind === 'agentType'
                ? e.type === name && e.name !== from.name
                : e.name !== from.name,
        );
        if (hits.length === 0) {
          if (!wait || kind === 'all') return undefined;
          const awaited = `${kind === 'agent' ? 'a' : kind === 'thread' ? 't' : 'y'}.${name}`;
          return { recipients: 0, awaiting: name, deliver: (seq) => push(kept, awaited, seq) };
        }
        return {
          recipients: hits.length,
          deliver: (seq) => {
            if (kind === 'thread') for (const e of hits) push(threadMail, entryId(e.name, e.thread), seq);
            else for (const n of new Set(hits.map((e) => e.name))) push(agentMail, n, seq);
          },
        };
      };

      const members: Member[] = [
        { name: 'ann', type: 'worker', spawned: false, n: 1, cursors: [] },
        { name: 'bob', type: 'worker', spawned: false, n: 1, cursors: [] },
        { name: 'lead', type: 'lead', spawned: true, n: 1, cursors: [] },
        { name: 'cat', type: 'worker', spawned: false, n: 1, cursors: [] }, // arrives later
      ];
      const live = () => members.filter((m) => m.agent !== undefined);
      const start = async (m: Member) => {
        const thread = threadOf(m);
        if (m.spawned) {
          const a = await spawnAgent(['--store', url, '--agent', m.name, '--agent-type', m.type, '--thread', thread]);
          closing.push(() => a.close());
          m.agent = a;
          m.stop = async (kill) => (kill ? a.kill() : a.close());
        } else {
          const store = await openStore();
          const a = await connect({ store, config: { agent: m.name, agentType: m.type, thread, tools: ['all'] } });
          closing.push(() => a.close());
          m.agent = a;
          m.stop = async () => {
            await a.close();
            await store.close();
          };
        }
        await m.agent.ok('whoami');
        roster.set(entryId(m.name, thread), { name: m.name, thread, type: m.type });
        // its sign of life is written by its first call (a reply waits for it only briefly)
        for (let i = 0; i < 100; i++) {
          const agents = (await m.agent.ok('team_list')).agents as Array<{ agent: string; thread: string }>;
          if (agents.some((e) => e.agent === m.name && e.thread === thread)) break;
          await sleep(50);
        }
      };
      const stop = async (m: Member, kill = false) => {
        await m.stop!(kill);
        m.agent = undefined;
      };

      /** Checks every live agent's inbox and every roster entry's unread count against the model. */
      const check = async (what: string) => {
        for (const m of live()) {
          const want = pending(m.name, threadOf(m), m.type);
          const got = await m.agent!.ok('inbox', { waitMs: 0, limit: 100 });
          const ctx = `${what}: ${m.name} in ${threadOf(m)} reads its inbox\n${log.join('\n')}`;
          expect(
            got.messages.map((x: { id: string }) => x.id),
            ctx,
          ).toEqual(want.slice(0, 100).map((s) => `m${s}`));
          expect(got.unread, ctx).toBe(want.length);
          for (const x of got.messages as Array<{ id: string; from: string; fromThread: string; to: string; content: string }>) {
            expect({ from: x.from, fromThread: x.fromThread, to: x.to, content: x.content }, ctx).toEqual(sent.get(Number(x.id.slice(1))));
          }
        }
        const viewer = pick(live());
        const agents = (await viewer.agent!.ok('team_list')).agents as Array<{ agent: string; thread: string; unread: number }>;
        const listed = Object.fromEntries(agents.map((e) => [entryId(e.agent, e.thread), e.unread]));
        const want = Object.fromEntries(
          [...roster.values()].map((e) => [entryId(e.name, e.thread), Math.min(1000, pending(e.name, e.thread, e.type).length)]),
        );
        expect(listed, `${what}: the roster and its unread counts\n${log.join('\n')}`).toEqual(want);
      };

      const targets = (): string[] => [
        ...members.map((m) => m.name),
        'dan',
        'agentType:worker',
        'agentType:lead',
        'agentType:critic',
        ...new Set([...roster.values()].map((e) => `thread:${e.thread}`)),
        ...members.map((m) => `thread:${m.name}-${m.n + 1}`),
        'thread:nowhere',
        'all',
      ];
      const sendArgs = (to: string) => {
        const wait = r() < 0.4;
        const ik = r() < 0.25 ? `k${serial + 1}` : undefined;
        return {
          to,
          content: `c${++serial} ${pick(['x', 'ü', '😀'])}`,
          ...(wait ? { waitForRecipient: true } : {}),
          ...(ik ? { idempotencyKey: ik } : {}),
        };
      };
      const retries: Array<{ m: Member; thread: string; args: Record<string, unknown>; reply: unknown }> = [];
      /** Sends from `m`, checking its reply against the model and applying it. */
      const send = async (m: Member, to: string, args = sendArgs(to)) => {
        const want = resolve(m, to, args.waitForRecipient === true);
        note(
          `${m.name}@${threadOf(m)} send ${JSON.stringify(args)} -> ${want ? `${want.recipients} ${want.awaiting ?? ''}` : 'NOT_FOUND'}`,
        );
        const reply = await m.agent!.raw('message_send', args);
        if (want === undefined) {
          expect(reply.isError, `${to}: nobody to reach\n${log.join('\n')}`).toBe(true);
          expect(errorOf(reply).code).toBe('NOT_FOUND');
          return;
        }
        expect(reply.isError, `${to}: ${JSON.stringify(reply.content)}\n${log.join('\n')}`).toBeFalsy();
        const got = reply.structuredContent as { messageId: string; recipients: number; awaiting?: string };
        const seq = ++lastSeq;
        expect({ id: got.messageId, recipients: got.recipients, awaiting: got.awaiting }, `${to}\n${log.join('\n')}`).toEqual({
          id: `m${seq}`,
          recipients: want.recipients,
          awaiting: want.awaiting,
        });
        sent.set(seq, { from: m.name, fromThread: threadOf(m), to, content: args.content });
        want.deliver(seq);
        if (args.idempotencyKey) retries.push({ m, thread: threadOf(m), args, reply: reply.structuredContent });
        return seq;
      };

      for (const m of members.slice(0, 3)) await start(m);
      await check('start');
      for (let step = 0; step < STEPS; step++) {
        const x = int(100);
        const senders = live();
        if (x < 35) {
          await send(pick(senders), pick(targets()));
        } else if (x < 45 && senders.length >= 2) {
          // two or three agents send at once: the sequence numbers are the next ones, each given once
          const batch = senders.filter(() => r() < 0.7).slice(0, 3);
          const calls = batch.map((m) => {
            const to = pick(targets());
            const args = sendArgs(to);
            const want = resolve(m, to, args.waitForRecipient === true);
            note(`${m.name}@${threadOf(m)} send (at once) ${JSON.stringify(args)} -> ${want ? want.recipients : 'NOT_FOUND'}`);
            return { m, to, args, want, reply: m.agent!.raw('message_send', args) };
          });
          // while an agent reads: it sees the sends that committed before its read, never a later one without an earlier
          const reader = pick(senders);
          const before = pending(reader.name, threadOf(reader), reader.type);
          const reading = reader.agent!.ok('inbox', { waitMs: 0, limit: 100 });
          const done: Array<{ seq: number; call: (typeof calls)[number] }> = [];
          for (const call of calls) {
            const reply = await call.reply;
            if (call.want === undefined) {
              expect(errorOf(reply).code, `${call.to}\n${log.join('\n')}`).toBe('NOT_FOUND');
              continue;
            }
            const got = reply.structuredContent as { messageId: string; recipients: number; awaiting?: string };
            expect({ recipients: got.recipients, awaiting: got.awaiting }).toEqual({
              recipients: call.want.recipients,
              awaiting: call.want.awaiting,
            });
            done.push({ seq: Number(got.messageId.slice(1)), call });
            if (call.args.idempotencyKey) retries.push({ m: call.m, thread: threadOf(call.m), args: call.args, reply: got });
          }
          expect(done.map((d) => d.seq).sort((a, b) => a - b)).toEqual(done.map((_, i) => lastSeq + 1 + i));
          lastSeq += done.length;
          for (const { seq, call } of done.sort((a, b) => a.seq - b.seq)) {
            sent.set(seq, { from: call.m.name, fromThread: threadOf(call.m), to: call.to, content: call.args.content });
            call.want!.deliver(seq);
          }
          const seen = ((await reading).messages as Array<{ id: string }>).map((x) => x.id);
          const after = pending(reader.name, threadOf(reader), reader.type).map((q) => `m${q}`);
          expect(seen.length, log.join('\n')).toBeGreaterThanOrEqual(Math.min(100, before.length));
          expect(seen, `${reader.name} read while others sent\n${log.join('\n')}`).toEqual(after.slice(0, seen.length));
        } else if (x < 70) {
          // a read, now and then acknowledging the last cursor (or an older one: the position never goes back)
          const m = pick(senders);
          const limit = 1 + int(5);
          const ack = m.cursors.length > 0 && r() < 0.7 ? (r() < 0.6 ? m.cursors.at(-1)! : pick(m.cursors)) : undefined;
          note(`${m.name}@${threadOf(m)} inbox limit ${limit}${ack ? ` ack ${ack}` : ''}`);
          if (ack) acked(m.name, threadOf(m), Number(ack));
          const want = pending(m.name, threadOf(m), m.type);
          const got = await m.agent!.ok('inbox', { waitMs: 0, limit, ...(ack ? { ack } : {}) });
          const page = want.slice(0, limit);
          const cursor = page.length > 0 ? page.at(-1)! : (threadPos.get(entryId(m.name, threadOf(m))) ?? 0);
          expect(
            { ids: got.messages.map((x: { id: string }) => x.id), unread: got.unread, cursor: got.cursor, timedOut: got.timedOut },
            log.join('\n'),
          ).toEqual({
            ids: page.map((s) => `m${s}`),
            unread: want.length,
            cursor: String(cursor),
            timedOut: page.length ? undefined : true,
          });
          m.cursors.push(got.cursor);
        } else if (x < 77 && retries.length > 0) {
          // an idempotent retry from the same thread (its agent may have restarted since): the first reply, nothing sent
          const retry = pick(retries);
          if (retry.m.agent && threadOf(retry.m) === retry.thread) {
            note(`${retry.m.name} retry ${JSON.stringify(retry.args)}`);
            expect(await retry.m.agent.ok('message_send', retry.args), log.join('\n')).toEqual(retry.reply);
          }
        } else if (x < 85) {
          // a blocking inbox in one process woken by a send from another
          const waiter = pick(senders);
          const from = waiter.spawned ? pick(senders.filter((m) => !m.spawned)) : members.find((m) => m.spawned && m.agent);
          if (!from) continue;
          const drained = await waiter.agent!.ok('inbox', { waitMs: 0, limit: 100 });
          if (drained.messages.length > 0) {
            note(`${waiter.name}@${threadOf(waiter)} acks ${drained.cursor}`);
            acked(waiter.name, threadOf(waiter), Number(drained.cursor));
            await waiter.agent!.ok('inbox', { waitMs: 0, ack: drained.cursor });
          }
          if (pending(waiter.name, threadOf(waiter), waiter.type).length > 0) continue;
          note(`${waiter.name}@${threadOf(waiter)} waits`);
          const began = Date.now();
          const waiting = waiter.agent!.ok('inbox', { waitMs: 20_000 });
          await sleep(int(60));
          const seq = await send(from, waiter.name, { to: waiter.name, content: `c${++serial} wake` });
          const woke = await waiting;
          expect({ ids: woke.messages.map((x: { id: string }) => x.id), timedOut: woke.timedOut }, log.join('\n')).toEqual({
            ids: [`m${seq}`],
            timedOut: undefined,
          });
          expect(Date.now() - began).toBeLessThan(15_000);
        } else {
          // a restart: an in-process agent reconnects, the stdio server is killed with kill -9 (now and then in the
          // middle of a send); in the same thread or a new one. The late agent arrives.
          const m = pick(members);
          if (!m.agent) {
            note(`${m.name} arrives in ${threadOf(m)}`);
            await start(m);
          } else {
            const fresh = r() < 0.5;
            if (m.spawned && r() < 0.5) {
              const to = pick(targets());
              const args = sendArgs(to);
              const want = resolve(m, to, args.waitForRecipient === true);
              note(`${m.name}@${threadOf(m)} killed while sending ${JSON.stringify(args)}`);
              m.agent.raw('message_send', args).catch(() => {});
              await sleep(int(30));
              await stop(m, true);
              await sleep(300);
              const message = await probe.get(keysOf(undefined).message(lastSeq + 1));
              if (message !== undefined) {
                expect(want, 'a refused send left no message').toBeDefined();
                lastSeq++;
                sent.set(lastSeq, { from: m.name, fromThread: threadOf(m), to, content: args.content });
                want!.deliver(lastSeq);
                note(`  it was sent as m${lastSeq}`);
              }
            } else {
              note(`${m.name}@${threadOf(m)} ${m.spawned ? 'killed' : 'restarts'}`);
              await stop(m, m.spawned);
            }
            if (fresh) m.n++;
            note(`${m.name} starts in ${threadOf(m)}`);
            await start(m);
          }
        }
        await check(`step ${step}`);
      }
      for (const m of live()) await stop(m);
    },
    FULL ? 600_000 : 40_000,
  );
});
