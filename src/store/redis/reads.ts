// The Redis backend's reading scripts: records, a transaction's first round trip and listings, each telling Redis which
// large records this process holds, so that those come back as their revision instead of their text.
import type { WrittenRow } from '../known-records.js';
import type { RangeQuery } from '../types.js';
import type { RedisConnection } from './client.js';
import { type Fetched, HeldRecords } from './held-records.js';
import { readListing, type Listed } from './records.js';

/** The reads of one board: what they return, and the large records they hold. */
export class RedisReads {
  private readonly held = new HeldRecords();

  constructor(
    private readonly redis: RedisConnection,
    /** the board's epoch key (see scripts.ts) */
    private readonly epochKey: string,
  ) {}

  /** Records of `keys`, in one round trip. */
  async records(keys: string[]): Promise<Fetched[]> {
    const asked = this.held.ask(keys);
    const reply = (await this.redis.script('READ', asked.args, [this.epochKey])) as unknown[];
    this.held.adopt(reply[0]);
    return keys.map((key, i) => this.held.fetched(key, reply[1 + i] ?? null, asked, reply[0]));
  }

  /** A transaction's first round trip: the revision, the server's clock (ms) and the records of `prefetch`, atomically. */
  async begin(prefetch: string[]): Promise<{ revision: number; server: number; fetched: Map<string, Fetched> }> {
    const asked = this.held.ask(prefetch);
    const reply = (await this.redis.script('BEGIN', asked.args, [this.epochKey])) as unknown[];
    this.held.adopt(reply[3]);
    const fetched = new Map<string, Fetched>();
    for (const [i, key] of prefetch.entries()) fetched.set(key, this.held.fetched(key, reply[4 + i] ?? null, asked, reply[3]));
    return { revision: Number(reply[0]), server: Number(reply[1]) * 1000 + Math.floor(Number(reply[2]) / 1000), fetched };
  }

  /** The listing of `query`, made with the LIST script's arguments `args` (see `listArgs`). */
  async list(query: RangeQuery, args: string[]): Promise<Listed> {
    const asked = this.held.askRange(query.lo, query.hi);
    const reply = (await this.redis.script('LIST', [...args, ...asked.args], [this.epochKey])) as unknown[];
    this.held.adopt(reply[1]);
    return readListing(reply, args, (key, value) => this.held.fetched(key, value, asked, reply[1]));
  }

  /** Rows this process committed: the large records are held from now on, every other written key forgotten. */
  committed(written: WrittenRow[]): void {
    this.held.committed(written);
  }
}
