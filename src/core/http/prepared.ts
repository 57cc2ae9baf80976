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
  etag: string;
}

export function prepareJson(value: unknown): PreparedDocument {
  const body = JSON.stringify(value);
  return { body, etag: `"${createHash('sha256').update(body, 'utf8').digest('base64url')}"` };
}

/** RFC 9110 §13.1.2: `*` or any listed entity tag, compared weakly. */
function matches(header: string, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

export function sendPrepared(ctx: Context, doc: PreparedDocument, cacheControl: string): void {
  ctx.set('ETag', doc.etag);
  ctx.set('Cache-Control', cacheControl);
  if (matches(ctx.get('If-None-Match'), doc.etag)) {
    ctx.status = 304;
    return;
  }
  // The type first: assigning a string body would otherwise set `text/plain` on the way.
  ctx.type = 'application/json';
  ctx.body = doc.body;
}

/** A document built by `build`, kept while `topic` is unchanged; concurrent rebuilds share one build. */
export function preparedCache(
  feed: ChangeFeed | undefined,
  topic: ChangeTopic,
  build: () => Promise<unknown>,
): () => Promise<PreparedDocument> {
  let kept: { version: number; doc: PreparedDocument } | undefined;
  let flight: { version: number; p: Promise<PreparedDocument> } | undefined;
  return async () => {
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
}
