// Amplification against the failure rate (docs/policies.md, "Error
// injection"): attempts per request when a share of attempts fails whatever
// the load, for the scenario's own policy and three others, as Brooker's
// retry_sim figure draws it. One sweep of server.error_share per policy.

import { clone, setPath } from './paths';
import type { Scenario, SweepRow } from './types';

export const SHARES = { from: 0, to: 0.5, step: 0.1 };

export interface AmpPolicy { name: string; set: Record<string, string | number> }

/** The policies compared: the scenario's own, then the figure's three. */
export const AMP_POLICIES: AmpPolicy[] = [
  { name: 'As it stands', set: {} },
  { name: 'No retries', set: { 'client.retries': 0 } },
  { name: '10% token bucket', set: { 'client.budget.kind': 'token_bucket', 'client.budget.ratio': 0.1 } },
  { name: 'Breaker (opossum)', set: { 'client.breaker': 'opossum', 'client.breaker_failure_rate': 0.1, 'client.breaker_min_calls': 20 } },
];

/** The scenario a policy's sweep runs: the agent engine, no incident, the policy's keys. */
export function ampScenario(sc: Scenario, policy: AmpPolicy): Scenario {
  const next = clone(sc);
  setPath(next as unknown as Record<string, unknown>, 'engine', 'agent');
  setPath(next as unknown as Record<string, unknown>, 'incident.duration_s', 0);
  for (const [path, value] of Object.entries(policy.set)) setPath(next as unknown as Record<string, unknown>, path, value);
  return next;
}

/** Attempts per request in each row's last window (null where none ran). */
export function ampSeries(rows: SweepRow[]): { shares: number[]; attempts: (number | null)[] } {
  return {
    shares: rows.map((r) => r.values['server.error_share']),
    attempts: rows.map((r) => r.metrics.last_window?.attempts_per_request ?? null),
  };
}

/** "At 30% failing, 3 retries send 1.4x; no retries 1x; ...": the widest point in words. */
export function ampSummary(names: string[], series: (number | null)[][], shares: number[]): string {
  const i = shares.length - 1;
  const parts = names.map((n, k) => `${n} ${series[k][i] === null ? '–' : `${series[k][i]!.toFixed(2)}×`}`);
  return `With ${Math.round(shares[i] * 100)}% of attempts failing: ${parts.join(', ')} attempts per request.`;
}
