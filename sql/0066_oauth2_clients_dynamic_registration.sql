-- Clients created through OpenID Connect dynamic registration (POST /oauth2/register) are marked:
-- their URIs were chosen by an anonymous caller, so their outbound requests (jwks_uri,
-- request_uris, backchannel_logout_uri) refuse internal addresses unless
-- `oidc.dynamic_client_registration.allow_internal_addresses` is set. Existing rows keep false
-- (operator-created, Hydra's default).
ALTER TABLE oauth2_clients ADD COLUMN dynamic_registration boolean NOT NULL DEFAULT false;
