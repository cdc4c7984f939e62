// A real OpenID provider for the web inbox's sign-in tests: panva's
// oidc-provider (pinned in package.json), on 127.0.0.1, plain http, with its
// built-in login and consent pages (devInteractions: any password works; the
// login is the account id).
//
//   node provider.mjs --port P --client-id ID --client-secret S \
//        --redirect-uri URL [--post-logout-uri URL]
//
// One client for strands (PKCE required), a second one ("other-app") whose
// audience the misbehaviours below can put in an ID token. Accounts:
// alice@corp.example in [finance], bob@corp.example in [eng],
// carol@corp.example in [finance]; `email` and `groups` are in the ID token.
//
// Test-only control, GET /test-control?mode=M (prints nothing, answers ok):
//   normal       ID tokens as the provider signs them
//   audience     the ID token is for "other-app"
//   expired      the ID token expired ten minutes ago
//   unpublished  the ID token is signed with a key the JWKS does not publish
//   rotate       a new signing key is published (beside the old) and used
// Prints "listening http://127.0.0.1:P" once it takes requests.

import http from 'node:http';
import Provider from 'oidc-provider';
import { SignJWT, generateKeyPair, exportJWK, decodeJwt, decodeProtectedHeader } from 'jose';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
}
for (const need of ['port', 'client-id', 'client-secret', 'redirect-uri']) {
  if (!args[need]) {
    console.error(`provider.mjs: --${need} is needed`);
    process.exit(2);
  }
}
const port = Number(args.port);
const issuer = `http://127.0.0.1:${port}`;

const users = {
  'alice@corp.example': { groups: ['finance'], name: 'Alice' },
  'bob@corp.example': { groups: ['eng'], name: 'Bob' },
  'carol@corp.example': { groups: ['finance'], name: 'Carol' },
};

async function key(kid) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  const pub = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { privateKey, jwk, pub, kid };
}

const main = await key('main');
const unpublished = await key('unpublished');
let rotated = null;
let mode = 'normal';

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: args['client-id'],
      client_secret: args['client-secret'],
      redirect_uris: [args['redirect-uri']],
      post_logout_redirect_uris: args['post-logout-uri'] ? [args['post-logout-uri']] : [],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
    {
      client_id: 'other-app',
      client_secret: 'other-app-secret',
      redirect_uris: ['http://127.0.0.1:9/other'],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  pkce: { required: () => true },
  claims: {
    openid: ['sub', 'groups'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
  },
  // Scope claims in the ID token too (not only at userinfo).
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['a test-only cookie key, not a secret'] },
  jwks: { keys: [main.jwk] },
  async findAccount(ctx, id) {
    const user = users[id];
    if (!user) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: id,
          email_verified: true,
          name: user.name,
          preferred_username: id.split('@')[0],
          groups: user.groups,
        };
      },
    };
  },
});

// The ID token again, misbehaving as told (re-signed with the key it needs).
async function misbehave(idToken) {
  if (mode === 'normal' && !rotated) return idToken;
  const claims = decodeJwt(idToken);
  const header = decodeProtectedHeader(idToken);
  let signer = main;
  if (mode === 'audience') claims.aud = 'other-app';
  if (mode === 'expired') {
    const now = Math.floor(Date.now() / 1000);
    claims.iat = now - 1200;
    claims.exp = now - 600;
  }
  if (mode === 'unpublished') signer = unpublished;
  else if (rotated) signer = rotated;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: signer.kid, typ: header.typ })
    .sign(signer.privateKey);
}

provider.use(async (ctx, next) => {
  if (ctx.path === '/test-control') {
    const want = String(ctx.query.mode || 'normal');
    if (want === 'rotate') {
      rotated = await key(`rotated-${Date.now()}`);
      mode = 'normal';
    } else {
      mode = want;
    }
    ctx.body = { ok: true, mode, rotated: rotated ? rotated.kid : null };
    return;
  }
  await next();
  if (ctx.path === '/jwks' && rotated && ctx.body && Array.isArray(ctx.body.keys)) {
    ctx.body = { keys: [rotated.pub, ...ctx.body.keys] };
  }
  if (ctx.path === '/token' && ctx.body && typeof ctx.body.id_token === 'string') {
    ctx.body = { ...ctx.body, id_token: await misbehave(ctx.body.id_token) };
  }
});

const server = http.createServer(provider.callback());
server.listen(port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
