/** The console's key sets page: the sets, a set's keys (newest signs), add a key, rotate, delete a key. */
import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import { badRequest, type ConsoleEnv } from '../env.ts';
import { confirmBody, e, postButton, table } from '../html.ts';

const KEY_ALGS = ['RS256', 'ES256', 'ES512', 'PS256', 'EdDSA', 'RS512', 'HS256'];
const enc = encodeURIComponent;

export function keyPages(env: ConsoleEnv, r: Registrar): void {
  const oauth2 = env.c.oauth2;

  const addKeyForm = (ctx: Context, set: string) => `<form method="post" action="/console/keys/add">
<input type="hidden" name="csrf" value="${e(env.csrf(ctx))}">
<label for="set">Key set</label>
<input type="text" id="set" name="set" required value="${e(set)}">
<label for="alg">Algorithm</label>
<select id="alg" name="alg">${KEY_ALGS.map((a) => `<option>${a}</option>`).join('')}</select>
<label for="use">Use</label>
<select id="use" name="use"><option value="sig">sig (signing)</option><option value="enc">enc (encryption)</option></select>
<label for="kid">Key id <span class="hint" id="kid-hint">Empty: a random id.</span></label>
<input type="text" id="kid" name="kid" aria-describedby="kid-hint">
<div class="actions"><button type="submit">Add key</button></div>
</form>`;

  r.get('/keys', async function consoleKeys(ctx) {
    const sets = await oauth2.jwks.listSets();
    const rows = sets.map((s) => [
      `<a href="/console/keys/${enc(s.sid)}"><code>${e(s.sid)}</code></a>`,
      String(s.keys),
    ]);
    env.page(
      ctx,
      'Key sets',
      `${table('Key sets', ['Set', 'Keys'], rows, 'No key sets yet.')}<h2>Add a key</h2>${addKeyForm(ctx, '')}`,
    );
  });

  r.get('/keys/:set', async function consoleKeySet(ctx) {
    const set = env.param(ctx, 'set');
    const { keys } = await oauth2.jwks.getKeySet(set);
    const rows = keys.map((k, i) => [
      `<code>${e(String(k.kid ?? ''))}</code>${i === 0 ? ' <strong>(newest: signs)</strong>' : ''}`,
      e(String(k.alg ?? '')),
      e(String(k.use ?? '')),
      e(String(k.kty ?? '')),
      postButton(`/console/keys/${enc(set)}/delete`, 'Delete…', env.csrf(ctx), {
        cls: 'secondary',
        fields: { kid: String(k.kid ?? '') },
      }),
    ]);
    const body = `<div class="actions">${postButton(`/console/keys/${enc(set)}/rotate`, 'Rotate: generate a new signing key', env.csrf(ctx))}</div>
${table(`Keys of ${set}, newest first`, ['Key id', 'Algorithm', 'Use', 'Type', 'Actions'], rows)}
<h2>Add a key</h2>${addKeyForm(ctx, set)}`;
    env.page(ctx, `Key set ${set}`, body);
  });

  r.post('/keys/add', async function consoleKeyAdd(ctx) {
    const set = env.field(ctx, 'set').trim();
    if (!set) throw badRequest('Name the key set.');
    const kid = env.field(ctx, 'kid').trim();
    await oauth2.jwks.createKeySet(set, {
      alg: env.field(ctx, 'alg'),
      use: env.field(ctx, 'use') || 'sig',
      ...(kid ? { kid } : {}),
    });
    ctx.status = 303;
    ctx.redirect(`/console/keys/${enc(set)}?done=key-added`);
  });

  r.post('/keys/:set/rotate', async function consoleKeyRotate(ctx) {
    const set = env.param(ctx, 'set');
    const { keys } = await oauth2.jwks.getKeySet(set);
    const newest = keys[0];
    await oauth2.jwks.createKeySet(set, {
      alg: String(newest?.alg ?? 'RS256'),
      use: String(newest?.use ?? 'sig'),
    });
    ctx.status = 303;
    ctx.redirect(`/console/keys/${enc(set)}?done=key-rotated`);
  });

  r.post('/keys/:set/delete', async function consoleKeyDelete(ctx) {
    const set = env.param(ctx, 'set');
    const kid = env.field(ctx, 'kid');
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        `Delete key ${kid}`,
        confirmBody({
          action: `/console/keys/${enc(set)}/delete`,
          question: `Delete the key ${kid} from ${set}?`,
          consequence: 'Tokens signed with it can no longer be verified. This cannot be undone.',
          button: 'Delete key',
          back: `/console/keys/${enc(set)}`,
          csrf: env.csrf(ctx),
          fields: { kid },
        }),
      );
    }
    await oauth2.jwks.deleteKey(set, kid);
    ctx.status = 303;
    ctx.redirect('/console/keys?done=key-deleted');
  });
}
