-- RFC 9449 §5.2: a client registered with `dpop_bound_access_tokens` must send a DPoP proof with
-- every token request (its access tokens are always sender-constrained).
ALTER TABLE oauth2_clients ADD COLUMN dpop_bound_access_tokens boolean NOT NULL DEFAULT false;
