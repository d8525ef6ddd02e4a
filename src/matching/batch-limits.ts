/**
 * The bounds of a batch plan's per-provider ceiling, in a module of their own with no imports: the CLI's `batch`
 * command reads them when it registers, and every command loads that (test/e2e/cli-lazy.test.ts: `c0mpute --version`
 * loads no records, no libp2p, no LevelDB); batch-plan.ts imports the records.
 */

/** Default per-provider ceiling (lines one provider may hold in one plan) when the caller configures none. */
export const BATCH_PROVIDER_CEILING = 64;
/** The largest per-provider ceiling taken (`--ceiling`, the API's `ceiling`): nine digits, past any window's lines. */
export const BATCH_CEILING_MAX = 999_999_999;
