-- Graceful refresh-token rotation judges a used token on its used-times count alone: within the
-- grace period a used refresh token keeps working up to the configured reuse count. Hydra's
-- `used_times` column is nullable: rows written before the column existed (or imported from Hydra)
-- carry NULL, which counts as "used 0 times". Dropping NOT NULL lets such rows live here too; the
-- rotation code reads NULL as 0 and writes COALESCE(used_times, 0) + 1.
-- Metadata-only change (no table rewrite).
ALTER TABLE oauth2_refresh_tokens ALTER COLUMN used_times DROP NOT NULL;
