/**
 * Words people use for the same thing in notes about software, for query expansion: a query that says
 * `purchase` also looks for `buy`, one that says `quit` also for `shutdown`. Each line is one group of
 * interchangeable words; a word matches by its stem (text-features.ts), so inflections count too.
 * Hand-written from common software and business vocabulary, not from any one project; expansion is on
 * the query side only, so stored items and their vectors never change when this table does.
 */
import { stem } from './text-features.js';

const GROUPS = `
buy purchase order acquire
delete remove drop erase purge
lost lose stolen missing misplaced
stop quit shutdown terminate sigterm halt exit
start launch boot startup
die crash killed dead
fail failure error broken break
retry resend redeliver reattempt
twice duplicate double repeated again
money funds cash amount balance
customer client buyer shopper consumer
merchant seller shop vendor store retailer
charge bill debit
refund reimburse repay chargeback
hide mask redact obscure scrub
personal pii private sensitive
secret credential token password key
release deploy rollout ship
downtime outage unavailable
holiday weekend peak season
verify validate check confirm inspect
identity kyc onboarding
setting config configuration option env variable
typo misspelled misspelling misspell unknown
simultaneous concurrent parallel race
lock deadlock mutex
database db postgres postgresql sql
email mail
undeliverable bounce bounced
timezone tz utc
autumn dst daylight
deadline cutoff due
nightly cron scheduled periodic
weight weigh heavy scale kilogram
package parcel shipment
postage label carrier
goods items products stock inventory merchandise sku
shelf bin slot
return returned
resell sellable sale
cold freezer frozen
gloves mittens
screen ui display page
operator admin staff employee supervisor
permission role access
login signin sso authentication
analytics report reporting dashboard metrics
primary master main
replica secondary standby
incoming inbound receiving arrival
outgoing outbound
quarantine isolate
value valuation worth cost
text sms
phone mobile
flaky intermittent nondeterministic
fix fixed patch repair resolve
slow latency delay lag performance
queue backlog
notify alert notification
scanner handheld barcode device
backup snapshot restore
migration schema alter
rollback revert undo
signature signed hmac
webhook callback
attacker replay malicious
rounding drift precision
worker consumer processor
task job
`;

const byStem = new Map<string, string[]>();
for (const line of GROUPS.trim().split('\n')) {
  const group = line.trim().split(/\s+/);
  for (const word of group) {
    const key = stem(word);
    byStem.set(key, [...new Set([...(byStem.get(key) ?? []), ...group.filter((w) => stem(w) !== key)])]);
  }
}

/** The other words of each query word's groups, without the query's own words (lowercase, distinct). */
export function expansions(words: string[]): string[] {
  const own = new Set(words.map(stem));
  const out = new Set<string>();
  for (const w of words) for (const s of byStem.get(stem(w)) ?? []) if (!own.has(stem(s))) out.add(s);
  return [...out];
}
