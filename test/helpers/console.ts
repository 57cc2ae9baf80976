/**
 * The operator console over plain HTTP: a cookie jar shared by both listeners (cookies are per
 * host, and both are 127.0.0.1), redirects followed by hand, and sign-in through the development
 * login page.
 */
import type { TestServer } from './apps.ts';

export type Jar = Map<string, string>;

export const cookieHeader = (jar: Jar) => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');

/** Stores the response's cookies in the jar; an empty value removes the cookie. */
export function keep(jar: Jar, res: Response) {
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const [k, ...v] = (pair ?? '').split('=');
    if (!k) continue;
    if (v.join('=') === '') jar.delete(k);
    else jar.set(k, v.join('='));
  }
}

/** The value of a hidden form field of the page. */
export const hidden = (html: string, name: string) =>
  new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

/** Follows redirects by hand, keeping cookies; returns the last URL and response. */
export async function walk(url: string, jar: Jar, init: RequestInit = {}) {
  let res = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, cookie: cookieHeader(jar) } });
  for (let i = 0; i < 15; i++) {
    keep(jar, res);
    const loc = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !loc) break;
    url = new URL(loc, url).toString();
    res = await fetch(url, { redirect: 'manual', headers: { cookie: cookieHeader(jar) } });
  }
  return { url, res };
}

/**
 * Opens `start` on the admin listener and signs `subject` in on the development login page it
 * leads to; `first` is where the console sent the browser, the rest is the last page.
 */
export async function consoleSignIn(srv: TestServer, subject: string, password: string, jar: Jar, start: string) {
  const first = await walk(`${srv.adminUrl}${start}`, jar);
  const html = await first.res.text();
  const done = await walk(`${srv.publicUrl}/dev/login`, jar, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ challenge: hidden(html, 'challenge'), csrf: hidden(html, 'csrf'), subject, password }),
  });
  return { ...done, first: first.url, jar };
}

/**
 * A signed-in operator (`subject`, the development login's password) with its session's CSRF token,
 * and GET/POST helpers on the admin listener (redirects not followed). `csrfOnPost`: every POST
 * carries the token (a test of refusals leaves it off and forges its own).
 */
export async function consoleOperator(
  srv: TestServer,
  o: { subject?: string; password?: string; csrfOnPost?: boolean } = {},
) {
  const jar: Jar = new Map();
  const done = await consoleSignIn(srv, o.subject ?? 'ada@example.com', o.password ?? 'gatehouse-dev', jar, '/console');
  const url = done.url;
  const csrf = hidden(await done.res.text(), 'csrf');
  const get = async (path: string) => {
    const res = await fetch(`${srv.adminUrl}${path}`, { redirect: 'manual', headers: { cookie: cookieHeader(jar) } });
    return { res, html: await res.text() };
  };
  const post = async (path: string, fields: Record<string, string>) => {
    const res = await fetch(`${srv.adminUrl}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar) },
      body: new URLSearchParams(o.csrfOnPost ? { csrf, ...fields } : fields),
    });
    return { res, html: await res.text() };
  };
  return { get, post, csrf, url };
}
