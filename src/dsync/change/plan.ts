/**
 * A change of a directory, planned in TypeScript: the names it locks, the rows it reads (with what
 * it expects to read), the statements that write, and its events, whose payloads payload.ts builds.
 * Every write of a directory — a SCIM request, the controller's writes, a Google sync — is planned
 * as one `DirectoryChange` and applied by `apply` (apply.ts), which knows nothing of what the change
 * means.
 *
 * A plan is made by a planner, a function of what is known about the directory (the facts): it asks
 * for each fact with `read`, which answers from what an earlier call read (or a guess), and records
 * the read with the text it expects. Applying the plan runs the reads again, under the change's
 * locks, and writes only if every read still gives the expected text; otherwise the planner runs
 * again on what was read. So a plan is only applied on the rows as they are, as if it had read them
 * in its own transaction. On PostgreSQL a fact read with its rows' versions (steps.ts Versioned) is
 * read again as its versions only: the plan expects them, and names the whole read to run instead
 * when they changed, so that the planner can run again on what it gives.
 */
import { randomUUID } from 'node:crypto';
import { envelope } from '../events/payload.ts';
import { factJson, type Read, type Statement, versionOf } from '../store/steps.ts';
import type { Directory, DirectorySyncEventType, DsyncGroup, DsyncUser } from '../types.ts';

export interface PlannedRead {
  key: string;
  stmt: Statement;
  /** What `stmt` gives when the plan holds: `text`, or the versions in it when `stmt` checks them. */
  expect: string;
  /** The read run instead when `stmt` does not give `expect`: the whole read behind a version check. */
  else?: Statement;
  /** The text the plan was made on. */
  text: string;
  locks: boolean;
  kept: boolean;
}

/** A write of the plan, as events name it (`when`). */
export interface WriteRef {
  readonly write: number;
}

export interface PlannedEvent {
  id: string;
  event: DirectorySyncEventType;
  /** The payload as JSON text, written when the planner made the event (a snapshot: it is stored as it is). */
  payload: string;
  /** Kept only when that write returned `key` (or any key when `key` is absent). */
  when?: { write: number; key?: string };
}

export interface DirectoryChange {
  /** Name locks, taken before anything is read (core/db/locks.ts). */
  locks: string[];
  reads: PlannedRead[];
  writes: Statement[];
  events: PlannedEvent[];
}

/**
 * What is known about the directory: the text a read gave, by the read's key, and that text parsed
 * (`value`, frozen: the parse of a fact kept for later writes is shared by their plans).
 */
export type Facts = (key: string) => { text: string; value?: unknown } | undefined;

/** `v` and everything in it made read-only (a planner builds new objects from what it read). */
export function frozen<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) frozen(x);
    Object.freeze(v);
  }
  return v;
}

/** Builds one change; planners receive it. */
export class ChangePlan {
  readonly directory: Directory;
  private readonly facts: Facts;
  /** Reads with versions (PostgreSQL), see the head of this file. */
  private readonly versions: boolean;
  readonly change: DirectoryChange = { locks: [], reads: [], writes: [], events: [] };

  constructor(directory: Directory, facts: Facts, versions = false) {
    this.directory = directory;
    this.facts = facts;
    this.versions = versions;
  }

  /** Locks these names (see store/users.ts nameLocks) for the change, before its reads. */
  lock(names: readonly string[]): void {
    this.change.locks.push(...names);
  }

  /**
   * A fact: what the read gave the last time it ran for this write (or for an earlier write of
   * this process), else `guess` (json text; `null` when the planner has no better one). The plan
   * holds only if the read gives the same text when it is applied.
   */
  read<T>(r: Read<T>, guess = 'null'): T {
    const known = this.facts(r.key);
    const text = known?.text ?? guess;
    const read = { key: r.key, text, locks: r.locks === true, kept: r.kept === true };
    const versioned = this.versions ? r.versioned : undefined;
    const version = versioned && known ? versionOf(known.text) : undefined;
    const check = versioned && version !== undefined ? versioned.check(version) : undefined;
    this.change.reads.push(
      check && versioned && version !== undefined
        ? { ...read, stmt: check, expect: version, else: versioned.stmt }
        : { ...read, stmt: versioned?.stmt ?? r.stmt, expect: text },
    );
    return r.decode(known && 'value' in known ? known.value : factJson(text));
  }

  /** A statement that writes, run in order after the reads. */
  write(stmt: Statement): WriteRef {
    this.change.writes.push(stmt);
    return { write: this.change.writes.length - 1 };
  }

  /**
   * An event of the change (payload.ts builds it from the subject as it is now), kept only when
   * `when` is absent or its write returned `key` (any key when `key` is absent).
   */
  event(
    type: DirectorySyncEventType,
    subject: { user?: DsyncUser; group?: DsyncGroup; userId?: string },
    when?: WriteRef & { key?: string },
  ): void {
    this.change.events.push({
      id: randomUUID(),
      event: type,
      // A snapshot: later changes of the same objects in the planner must not alter it.
      payload: JSON.stringify(envelope(type, this.directory, subject)),
      ...(when ? { when: { write: when.write, ...(when.key !== undefined ? { key: when.key } : {}) } } : {}),
    });
  }
}

/** A planner: the change to make given the facts, and the write's answer. It may throw the write's error. */
export type Planner<T> = (plan: ChangePlan) => T;
