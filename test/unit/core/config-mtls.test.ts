/** `oauth2.mtls.*` (RFC 8705): the CA bundle and the trusted proxies are checked when the configuration is read. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { problems } from '../../helpers/config.ts';
import { testCa } from '../../helpers/tls.ts';

describe('oauth2.mtls', () => {
  it('is off by default; takes a PEM bundle and IPs and CIDRs of both families', () => {
    expect(loadConfig({ env: {} }).oauth2.mtls.enabled).toBe(false);
    const c = loadConfig({
      env: {},
      overrides: {
        'oauth2.mtls.enabled': true,
        'oauth2.mtls.ca': testCa().cert,
        'oauth2.mtls.trusted_proxy.header': 'X-SSL-Client-Cert',
        'oauth2.mtls.trusted_proxy.addresses': ['10.0.0.5', '10.1.0.0/16', '::1', 'fd00::/8'],
      },
    });
    expect(c.oauth2.mtls.enabled).toBe(true);
    expect(c.oauth2.mtls.trusted_proxy.header).toBe('X-SSL-Client-Cert');
  });

  it('names each key that is wrong', () => {
    expect(
      problems(() =>
        loadConfig({
          env: {},
          overrides: {
            'oauth2.mtls.ca': 'not a certificate',
            'oauth2.mtls.trusted_proxy.header': 'X SSL Cert',
            'oauth2.mtls.trusted_proxy.addresses': ['10.0.0.5', '10.0.0.0/33', 'proxy.internal'],
          },
        }),
      ),
    ).toEqual([
      'oauth2.mtls.ca: holds no PEM certificate',
      'oauth2.mtls.trusted_proxy.header: not an HTTP header name',
      "oauth2.mtls.trusted_proxy.addresses: '10.0.0.0/33' is not an IP address or CIDR",
    ]);
  });

  it('needs the proxies’ addresses when the header is set', () => {
    expect(
      problems(() => loadConfig({ env: {}, overrides: { 'oauth2.mtls.trusted_proxy.header': 'X-SSL-Client-Cert' } })),
    ).toEqual([
      'oauth2.mtls.trusted_proxy.addresses: must name the proxies when oauth2.mtls.trusted_proxy.header is set',
    ]);
  });
});
