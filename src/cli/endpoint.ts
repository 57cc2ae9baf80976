/**
 * The HTTP client of the CLI (`send`, used by every command that calls gatehouse over HTTP) and the
 * admin-API calls on it: `-e/--endpoint` or `ORY_SDK_URL` (Hydra's flag and variable), the admin
 * credential (`--token` or `GATEHOUSE_ADMIN_TOKEN`, for `serve.admin.auth`), JSON in and out, and
 * one-line errors for every failure.
 */
import { Option } from 'commander';

export const endpointOption = () =>
  new Option('-e, --endpoint <url>', 'admin API URL (e.g. http://127.0.0.1:4445)').env('ORY_SDK_URL');

/** The base URL without a trailing slash. @throws when it is missing or not an http(s) URL */
export function endpointOf(o: { endpoint?: string }): string {
  const e = o.endpoint?.trim();
  if (!e) throw new Error('set the admin API URL with --endpoint or ORY_SDK_URL');
  if (!URL.canParse(e) || !/^https?:$/.test(new URL(e).protocol)) {
    throw new Error(`the endpoint ${JSON.stringify(e)} is not an http(s) URL`);
  }
  return e.replace(/\/+$/, '');
}

/** `--token`: the admin API credential, for servers with `serve.admin.auth.enabled` (Hydra has none). */
export const adminTokenOption = () =>
  new Option(
    '--token <token>',
    'admin API credential (an API key or an admin access token), sent as Authorization: Bearer',
  ).env('GATEHOUSE_ADMIN_TOKEN');

/** Where the admin API is and the credential for it (`--token`; none: the server's auth is off). */
export interface AdminApi {
  base: string;
  token?: string | undefined;
}

/** The admin API of a command's flags. @throws when the endpoint is missing or not an http(s) URL */
export function adminApiOf(o: { endpoint?: string; token?: string }): AdminApi {
  return { base: endpointOf(o), token: o.token?.trim() || undefined };
}

/**
 * The headers every admin API call carries: `Authorization: Bearer <token>` (RFC 6750 §2.1) when a
 * credential is given. The one place the CLI sends it; it never prints it.
 */
export function adminHeaders(token: string | undefined, headers: Record<string, string> = {}): Record<string, string> {
  return token ? { ...headers, authorization: `Bearer ${token}` } : headers;
}

/** `Authorization: Basic …` for client_secret_basic: id and secret form-encoded first (RFC 6749 §2.3.1). */
export function basicAuthorization(id: string, secret: string): string {
  const formEncode = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** An answer of `send`: the body read whole, parsed when it is JSON (else the text; undefined when empty). */
export interface HttpAnswer extends ApiResponse {
  ok: boolean;
  text: string;
}

/**
 * One HTTP request of the CLI, bounded to 10 s.
 * @throws an Error `cannot reach <what> (<cause>)` when no answer comes (`what`: the base URL by default)
 */
export async function send(
  url: string | URL,
  init: { method: string; headers?: Record<string, string>; body?: string | URLSearchParams },
  what: string = new URL(url).origin,
): Promise<HttpAnswer> {
  let r: Response;
  try {
    r = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    const c = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`cannot reach ${what} (${c?.code ?? c?.message ?? (e as Error).message})`);
  }
  const text = await r.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text (for the error message)
  }
  return { status: r.status, ok: r.ok, headers: r.headers, text, body };
}

/** The answer's body when it is a JSON object, else `{}`. */
export const objectBody = (a: HttpAnswer): Record<string, unknown> =>
  typeof a.body === 'object' && a.body !== null ? (a.body as Record<string, unknown>) : {};

/** `status error: description` from a Hydra error body, whatever its shape. */
function describeError(status: number, body: unknown): string {
  const b = typeof body === 'object' && body !== null ? (body as { error?: unknown; error_description?: unknown }) : {};
  if (typeof b.error === 'string') {
    return `${status} ${b.error}${b.error_description ? `: ${b.error_description}` : ''}`;
  }
  if (b.error && typeof b.error === 'object')
    return `${status} ${(b.error as { message?: string }).message ?? 'error'}`;
  return `${status} ${typeof body === 'string' && body ? body : 'the server answered with an error'}`;
}

/** Calls the admin API. @throws an Error with a one-line message on a network failure or a non-2xx answer */
export async function adminRequest(api: AdminApi, method: string, path: string, body?: unknown): Promise<ApiResponse> {
  const a = await send(
    `${api.base}${path}`,
    {
      method,
      headers: adminHeaders(api.token, {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    },
    api.base,
  );
  if (a.status >= 400) throw new Error(describeError(a.status, a.body));
  return { status: a.status, headers: a.headers, body: a.body };
}
