import type { Scenario } from '../types.ts';

const warm = async (url: string) => {
  const r = await fetch(`${url}/.well-known/jwks.json`);
  if (r.status !== 200) throw new Error(`jwks.json answered ${r.status}`);
};

export const scenarios: Scenario[] = [
  {
    name: 'GET /.well-known/jwks.json (public)',
    listener: 'public',
    setup: async (s) => {
      await warm(s.publicUrl);
      return [{ path: '/.well-known/jwks.json' }];
    },
  },
  {
    name: 'GET /.well-known/openid-configuration (public)',
    listener: 'public',
    setup: async (s) => {
      await warm(s.publicUrl);
      return [{ path: '/.well-known/openid-configuration' }];
    },
  },
];
