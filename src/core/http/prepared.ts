/**
 * Documents served prepared: serialised once, with a strong ETag (SHA-256 of the bytes), answered
 * `304 Not Modified` on a matching `If-None-Match` (RFC 9110 §13.1.2). A prepared document is rebuilt
 * when the change feed's version of its topic moves (see core/db/changes.ts); while the feed is not
 * live it is rebuilt per request, so a stale document is never served for longer than a
 * notification takes.
 */
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { ChangeFeed, ChangeTopic } from '../db/changes.ts';

/**
 * Caches may keep a document for a minute and must then revalidate (a cheap 304 while unchanged);
 * relying parties refetch the JWKS anyway when a token names a key they do not know.
 */
export const DOCUMENT_CACHE_CONTROL = 'public, max-age=60, must-revalidate';

export interface PreparedDocument {
  /**
   * The serialised JSON. Written as a string: Node then sends the head and the body in one write,
   * where a Buffer body costs a second (vectored) one.
   */
  body: string;
  /** The body's length in bytes (UTF-8). */
  length: number;
  etag: string;
}

export function prepareJson(value: unknown): PreparedDocument {
  const body = JSON.stringify(value);
  return {
    body,
    length: Buffer.byteLength(body, 'utf8'),
    etag: `"${createHash('sha256').update(body, 'utf8').digest('base64url')}"`,
  };
}

/** A prepared document: built (or shared) on call; `ready()` is the one kept for the current version, if any. */
export interface PreparedSource {
  (): Promise<PreparedDocument>;
  /**
   * The document kept for the topic's current version, without waiting: undefined while the feed
   * is not live or the document has not been rebuilt since the last change.
   */
  ready(): PreparedDocument | undefined;
}

/**
 * A document the public listener answers before the Koa chain while it is `ready()` (see
 * core/http/apps.ts, preparedDispatch): GET and HEAD of exactly `path`.
 */
export interface PreparedRoute {
  path: string;
  document: PreparedSource;
  cacheControl: string;
}

/** RFC 9110 §13.1.2: `*` or any listed entity tag, compared weakly. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/**
 * The answer to a request for a prepared document: `304 Not Modified` on a matching
 * `If-None-Match`, else `200` with the type and length; both with the `ETag` and `Cache-Control`.
 * The Koa route (sendPrepared) and the dispatch before the chain (core/http/apps.ts) both send it.
 */
export function preparedAnswer(
  doc: PreparedDocument,
  cacheControl: string,
  ifNoneMatch: string | undefined,
): { status: 200 | 304; headers: Record<string, string | number> } {
  const headers: Record<string, string | number> = { ETag: doc.etag, 'Cache-Control': cacheControl };
  if (matches(ifNoneMatch, doc.etag)) return { status: 304, headers };
  headers['Content-Type'] = 'application/json; charset=utf-8';
  headers['Content-Length'] = doc.length;
  return { status: 200, headers };
}

export function sendPrepared(ctx: Context, doc: PreparedDocument, cacheControl: string): void {
  const a = preparedAnswer(doc, cacheControl, ctx.get('If-None-Match'));
  // The type is among the headers, set before the body: a string body would otherwise set `text/plain`.
  for (const [name, value] of Object.entries(a.headers)) ctx.set(name, String(value));
  ctx.status = a.status;
  if (a.status === 200) ctx.body = doc.body;
}

/** A document built by `build`, kept while `topic` is unchanged; concurrent rebuilds share one build. */
export function preparedCache(
  feed: ChangeFeed | undefined,
  topic: ChangeTopic,
  build: () => Promise<unknown>,
): PreparedSource {
  let kept: { version: number; doc: PreparedDocument } | undefined;
  let flight: { version: number; p: Promise<PreparedDocument> } | undefined;
  const ready = () => (feed?.live() && kept?.version === feed.version(topic) ? kept.doc : undefined);
  const get = async () => {
    if (!feed?.live()) return prepareJson(await build());
    const version = feed.version(topic);
    if (kept?.version === version) return kept.doc;
    if (flight?.version === version) return flight.p;
    const p = build().then((v) => prepareJson(v));
    flight = { version, p };
    try {
      const doc = await p;
      if (feed.live() && (!kept || kept.version <= version)) kept = { version, doc };
      return doc;
    } finally {
      if (flight?.p === p) flight = undefined;
    }
  };
  return Object.assign(get, { ready });
}
