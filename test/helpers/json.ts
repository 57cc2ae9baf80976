/**
 * The parsed JSON body of an HTTP answer, as the HTTP tests read it. The tests assert its shape:
 * they read members by path (`body.Resources[0].id`) and the assertion fails when the path or the
 * value is wrong, so narrowing every step first would add code without adding a check. Everything
 * else in the tests is typed; this is the one type that is not.
 */
// biome-ignore lint/suspicious/noExplicitAny: the untyped JSON body that HTTP tests read by path (see above)
export type JsonBody = any;

/** A GET that does not follow redirects; `body` is the parsed JSON when the answer is JSON, else the text. */
export async function getManual(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { redirect: 'manual', headers });
  const text = await res.text();
  let body: JsonBody = text;
  try {
    body = JSON.parse(text);
  } catch {
    // text
  }
  return { status: res.status, headers: res.headers, body, text };
}
