/** Page sizes of a node's job history (`GET /v1/jobs`, `c0mpute jobs`). Its own module so the CLI can say them without loading the history. */
export const JOBS_PAGE_DEFAULT = 100;
export const JOBS_PAGE_MAX = 1000;
