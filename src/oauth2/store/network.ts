/** Hydra's network id: every OAuth2 row carries it. gatehouse runs one default network (sql/0001). */
export const DEFAULT_NID = '00000000-0000-4000-8000-000000000000';
