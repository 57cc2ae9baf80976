/** The front-channel logout page escapes every value for its context, and front-channel URLs get iss and sid. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { frontchannelUrl } from '../../../src/oauth2/logout/channels.ts';
import { escapeHtml, frontchannelPage, scriptJson } from '../../../src/oauth2/logout/page.ts';

const HOSTILE = `https://rp.example/bye?x="><script>alert(1)</script>&y='</script><img src=x onerror=alert(2)>\u2028`;

describe('front-channel logout page', () => {
  it('renders one hidden iframe per URL and the redirect in meta refresh, script and links', () => {
    const html = frontchannelPage('https://rp.example/bye?a=1&b=2', [
      'https://a.example/fc?iss=i&sid=s',
      'https://b.example/fc',
    ]);
    expect(html.match(/<iframe /g)).toHaveLength(2);
    expect(html).toContain('<iframe src="https://a.example/fc?iss=i&amp;sid=s"></iframe>');
    expect(html).toContain('content="7; URL=https://rp.example/bye?a=1&amp;b=2"');
    expect(html).toContain('var total = 2;');
    expect(html).toContain('var redir = "https://rp.example/bye?a=1\\u0026b=2";');
    expect(html).toContain('setTimeout(redirect, 7000);');
    expect(html).toContain('<a href="https://rp.example/bye?a=1&amp;b=2">here</a>');
  });

  it('never lets a value close the script, an attribute or a tag', () => {
    const html = frontchannelPage(HOSTILE, [HOSTILE], 'n0nce');
    expect(html.split('<script nonce="n0nce">')).toHaveLength(2);
    expect(html.split('</script>')).toHaveLength(2);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('"><script>');
    expect(html).not.toContain("'</script>");
    const script = html.slice(html.indexOf('<script nonce="n0nce">'), html.indexOf('</script>'));
    expect(script).not.toContain('\u2028');
    // The script data reads back as the original string.
    const m = /var redir = (.*);\n/.exec(html);
    expect(JSON.parse(m?.[1] as string)).toBe(HOSTILE);
  });

  it('escapes arbitrary strings so that no markup character survives', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const e = escapeHtml(s);
        expect(e).not.toMatch(/[<>"']/);
        const j = scriptJson(s);
        expect(j).not.toMatch(/[<>&\u2028\u2029]/);
        expect(JSON.parse(j)).toBe(s);
      }),
    );
  });
});

describe('front-channel URLs', () => {
  it('adds iss and sid, keeps other parameters and replaces given ones', () => {
    const u = new URL(
      frontchannelUrl('https://rp.example/fc?tenant=a&sid=old', 'https://op.example/', 'sid-1') as string,
    );
    expect(u.searchParams.get('tenant')).toBe('a');
    expect(u.searchParams.getAll('sid')).toEqual(['sid-1']);
    expect(u.searchParams.get('iss')).toBe('https://op.example/');
    expect(frontchannelUrl('not a url', 'https://op.example/', 's')).toBeUndefined();
  });
});
