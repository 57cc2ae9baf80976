-- Mutual-TLS client authentication and certificate-bound access tokens (RFC 8705). A client using
-- `tls_client_auth` registers exactly one of the subject DN or a subject alternative name its
-- certificate must carry (§2.1.2); `tls_client_certificate_bound_access_tokens` (§3.4) binds its
-- access tokens to the certificate of the token request. Empty strings mean "not registered".
ALTER TABLE oauth2_clients
  ADD COLUMN tls_client_auth_subject_dn text NOT NULL DEFAULT '',
  ADD COLUMN tls_client_auth_san_dns text NOT NULL DEFAULT '',
  ADD COLUMN tls_client_auth_san_uri text NOT NULL DEFAULT '',
  ADD COLUMN tls_client_auth_san_ip text NOT NULL DEFAULT '',
  ADD COLUMN tls_client_auth_san_email text NOT NULL DEFAULT '',
  ADD COLUMN tls_client_certificate_bound_access_tokens boolean NOT NULL DEFAULT false;
