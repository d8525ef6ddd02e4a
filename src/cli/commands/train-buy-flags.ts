/**
 * `c0mpute train buy`'s option values, checked before the daemon is asked anything (train-buy.ts). Its own module, loaded
 * by the command's action only, so the CLI's start loads none of it (test/e2e/cli-lazy.test.ts).
 */
import { UsageError } from '../context.js';
import type { BuyFlags } from './train-buy.js';
import { AMOUNT_RE, CURRENCY_RE } from '../../records/money.js';
import { parseDid } from '../../records/did.js';
import { GRADES } from '../../records/kinds.js';

/** The most members a gang may have (`--providers`, `--members`): pickMembers' bound. */
const GANG_MAX = 64;
/** The shortest `--deadline` a member job may have: each job's timeout is the deadline less 10 s, at least 1 s. */
const MIN_MEMBER_DEADLINE_MS = 11_000;

/**
 * The command line's values, checked before the daemon is asked anything: a bad one is a UsageError with its own
 * code (exit 2), naming the option, instead of a member job refused later by the daemon or a NaN sent as a deadline.
 */
export function checkBuyFlags(f: BuyFlags): void {
  const bad = (code: string, field: string, what: string, v: string) => new UsageError(code, `--${field} ${what}, got "${v.slice(0, 40)}"`, { field });
  const whole = (v: string) => /^[0-9]{1,12}$/.test(v);
  if (f.providers !== undefined && f.members !== undefined) throw new UsageError('TRAIN_GANG_SIZE', 'name the gang one way: --providers <n> or --members <dids>, not both', { field: 'providers' });
  if (f.providers !== undefined && (!whole(f.providers) || Number(f.providers) < 1 || Number(f.providers) > GANG_MAX)) throw bad('TRAIN_GANG_SIZE', 'providers', `takes a whole number of members from 1 to ${GANG_MAX}`, f.providers);
  if (f.members !== undefined) {
    const dids = f.members.split(',').map((s) => s.trim()).filter(Boolean);
    if (dids.length < 1 || dids.length > GANG_MAX) throw bad('TRAIN_GANG_SIZE', 'members', `takes 1 to ${GANG_MAX} comma-separated DIDs`, f.members);
    const wrong = dids.find((d) => {
      try {
        parseDid(d);
        return false;
      } catch {
        return true;
      }
    });
    if (wrong !== undefined) throw bad('TRAIN_BAD_OPTION', 'members', 'takes did:key DIDs', wrong);
    if (new Set(dids).size !== dids.length) throw bad('TRAIN_BAD_OPTION', 'members', 'names each member once', f.members);
  }
  if (!whole(f.deadline) || Number(f.deadline) < MIN_MEMBER_DEADLINE_MS) throw bad('TRAIN_BAD_OPTION', 'deadline', `takes a whole number of milliseconds, at least ${MIN_MEMBER_DEADLINE_MS}`, f.deadline);
  if (!AMOUNT_RE.test(f.maxPrice)) throw bad('TRAIN_BAD_OPTION', 'max-price', 'takes a decimal amount like 0.01', f.maxPrice);
  if (!CURRENCY_RE.test(f.currency)) throw bad('TRAIN_BAD_OPTION', 'currency', 'takes a currency code like USD', f.currency);
  if (f.energy !== undefined && !whole(f.energy)) throw bad('TRAIN_BAD_OPTION', 'energy', 'takes a whole number of microjoules', f.energy);
  if (!(GRADES as readonly string[]).includes(f.energyGrade)) throw bad('TRAIN_BAD_OPTION', 'energy-grade', `takes ${GRADES.join(', ')}`, f.energyGrade);
  if (!whole(f.devicesPerMember) || Number(f.devicesPerMember) < 1) throw bad('TRAIN_BAD_OPTION', 'devices-per-member', 'takes a whole number, at least 1', f.devicesPerMember);
}

