/** The roles a node runs (config `roles`, `--role`). Its own module so the CLI can name them without loading the config schema. */
export const ROLE_NAMES = ['provider', 'buyer', 'witness', 'steward'] as const;
export type Role = (typeof ROLE_NAMES)[number];
