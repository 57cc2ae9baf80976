/**
 * The one way gatehouse answers with HTML. Every page goes through `sendHtml`, which sets:
 * - a strict `Content-Security-Policy`: nothing loads by default (`default-src 'none'`), inline
 *   `<script>` and `<style>` run only with the per-response nonce (no `unsafe-inline`, so inline
 *   event handlers and `javascript:` URLs never run), no `<base>`, no plugins, forms post only to
 *   the targets the page names, frames load only from the origins the page names, and the page
 *   itself may not be framed (`frame-ancestors 'none'`);
 * - `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY`
 *   (for browsers without CSP level 2) and `Cache-Control: no-store`.
 * A page builder receives the nonce and puts it on its `<script nonce>` / `<style nonce>` tags.
 */
import type { Context } from 'koa';
import { random } from '../crypto/random.ts';

export interface HtmlPolicy {
  /** Origins (`https://rp.example`) or schemes (`com.example.app:`) forms may submit to (default: none). */
  formAction?: readonly string[];
  /** Origins frames may load from (default: none). */
  frameSrc?: readonly string[];
  /** Origins images may load from (default: none). */
  imgSrc?: readonly string[];
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text and attribute values (quoted attributes only). */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);

/** JSON that is safe inside an inline `<script>`: no value can end the script or open a comment. */
export const scriptJson = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

/**
 * The CSP source expression of a URL: its origin for http(s), its scheme (`com.example.app:`)
 * otherwise; undefined when it cannot be expressed safely (no opaque origins, no quotes or spaces).
 */
export function cspSource(url: string): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const u = new URL(url);
  const source = u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : u.protocol;
  return /^[a-z][a-z0-9+.-]*:(\/\/[A-Za-z0-9.\-[\]:]+)?$/.test(source) ? source : undefined;
}

const list = (sources: readonly string[] | undefined) => {
  const s = [...new Set(sources ?? [])].filter((x) => /^[^\s;,']+$/.test(x));
  return s.length ? s.join(' ') : "'none'";
};

/**
 * This listener's origin as the request addressed it (protocol and `Host`, or the forwarded ones
 * behind a trusted proxy). Not `ctx.origin`: in Koa 3 that is the request's `Origin` header.
 */
export const listenerOrigin = (ctx: Context) => `${ctx.protocol}://${ctx.host}`;

/** The `Content-Security-Policy` value for one response. */
export function contentSecurityPolicy(nonce: string, p: HtmlPolicy = {}): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    `img-src ${list(p.imgSrc)}`,
    `frame-src ${list(p.frameSrc)}`,
    `form-action ${list(p.formAction)}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; ');
}

/** The security headers of every HTML response (with the CSP for `nonce`). */
export function htmlHeaders(nonce: string, p: HtmlPolicy = {}): Record<string, string> {
  return {
    'Content-Security-Policy': contentSecurityPolicy(nonce, p),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
    Pragma: 'no-cache',
  };
}

/** A fresh nonce (128 bits, base64). */
export const newNonce = () => random(16).toString('base64');

/**
 * Answers with an HTML page: `build` gets the response's nonce; `status` defaults to 200.
 * Use this for every HTML response (authorization, logout, fallback and future UI pages).
 */
export function sendHtml(ctx: Context, build: (nonce: string) => string, p: HtmlPolicy = {}, status = 200): void {
  const nonce = newNonce();
  const html = build(nonce);
  ctx.set(htmlHeaders(nonce, p));
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}
