import { describe, expect, it } from 'vitest';
import { amplificationShare, callsPerRequest, graphAt, layoutGraph, loadShare, stepAt, windowSteps } from './graphmodel';
import { timeoutWork } from './events';
import { getPath, setPath } from './paths';
import type { RunResult } from './types';

// users → gateway → api → db twice, and api → cache; step 0.5 s, four steps.
const calls = [
  { from: 'user', to: 'gateway' },
  { from: 'gateway', to: 'api' },
  { from: 'api', to: 'db', count: 2 },
  { from: 'api', to: 'cache' },
];
const zeros = () => [0, 0, 0, 0];
const service = (name: string, serves: boolean, first: number[], retries: number[], queue = zeros()) => ({
  name, serves, totals: {},
  series: { first_attempts: first, retries, served: zeros(), late: zeros(), rejected: zeros(), shed: zeros(), failed: zeros(), queue },
});
const edge = (from: string, to: string, c: number[], retries: number[]) => ({
  from, to, totals: {}, series: { calls: c, retries, timeouts: zeros(), failed: zeros(), denied: zeros(), delayed: zeros(), aborted: zeros() },
});
const result = {
  scenario: {
    step_s: 0.5, horizon_s: 2, calls,
    demand: { rate_per_s: 100 }, server: { capacity_per_s: 400 },
    services: { gateway: {}, api: { capacity_per_s: 200 }, db: { capacity_per_s: 300 }, cache: {} },
    incident: { start_s: 1, duration_s: 1, capacity_factor: 0.5 },
  },
  metrics: { peak_step_t_s: 1.5 },
  series: { t_s: [0, 0.5, 1, 1.5], capacity: [150, 150, 75, 75] },
  graph: {
    incident_service: 'db',
    services: [
      service('api', true, [50, 50, 50, 50], [0, 0, 50, 50]),
      service('cache', true, [50, 50, 50, 50], [0, 0, 0, 0]),
      service('db', true, [100, 100, 100, 200], [0, 0, 200, 400], [0, 0, 30, 90]),
      service('gateway', false, [50, 50, 50, 50], [0, 0, 0, 0]),
    ],
    edges: [
      edge('user', 'gateway', [50, 50, 50, 50], zeros()),
      edge('gateway', 'api', [50, 50, 50, 50], [0, 0, 50, 50]),
      edge('api', 'db', [100, 100, 100, 200], [0, 0, 200, 400]),
      edge('api', 'cache', [50, 50, 50, 50], zeros()),
    ],
  },
} as unknown as RunResult;

describe('one timeout of work in a graph', () => {
  it('is the incident service\'s capacity times its callers\' longest timeout', () => {
    const r = {
      ...result,
      scenario: {
        ...result.scenario, client: { timeout_s: 0.5 },
        calls: [...calls.slice(0, 2), { from: 'api', to: 'db', count: 2, timeout_s: 2 }, { from: 'cache', to: 'db' }],
      },
    } as unknown as RunResult;
    expect(timeoutWork(r)).toBe(300 * 2);
    // Without a graph: the top-level server and client.
    expect(timeoutWork({ ...r, graph: undefined } as RunResult)).toBe(400 * 0.5);
  });
});

describe('graph view model', () => {
  it('puts each service one column after its deepest caller', () => {
    const lay = layoutGraph(calls);
    const at = Object.fromEntries(lay.nodes.map((n) => [n.name, [n.depth, n.row]]));
    expect(at).toEqual({ user: [0, 0], gateway: [1, 0], api: [2, 0], db: [3, 0], cache: [3, 1] });
    expect([lay.depths, lay.rows]).toEqual([4, 2]);
    // A call that skips a tier: the shared database sits after its deepest caller.
    const skip = layoutGraph([{ from: 'user', to: 'a' }, { from: 'a', to: 'db' }, { from: 'a', to: 'b' }, { from: 'b', to: 'db' }]);
    expect(skip.nodes.find((n) => n.name === 'db')?.depth).toBe(3);
  });

  it('counts the calls per user request when nothing fails', () => {
    const share = callsPerRequest([...calls, { from: 'cache', to: 'db' }]);
    expect(Object.fromEntries(share)).toEqual({ user: 1, gateway: 1, api: 1, db: 3, cache: 1 });
  });

  it('sums one second of steps and reads the incident service its own capacity', () => {
    expect(windowSteps(0.5)).toBe(2);
    expect(windowSteps(0.05)).toBe(20);
    expect(windowSteps(2)).toBe(1);
    const at = graphAt(result, 3); // steps 2 and 3: t = 1 to 2 s
    expect(at.t).toBe(1.5);
    expect(at.seconds).toBe(1);
    const s = Object.fromEntries(at.services.map((x) => [x.name, x]));
    // db: (100 + 200) first + (200 + 400) retries = 900 attempts/s against 150/s.
    expect(s.db.arrivalsPerS).toBe(900);
    expect(s.db.capacityPerS).toBe(150);
    expect(s.db.load).toBe(6);
    // 100 user requests/s, two db calls each when healthy: 900 / 200 = 4.5 times.
    expect(s.db.amplification).toBe(4.5);
    expect(s.db.queue).toBe(90);
    expect(s.api.load).toBe(1); // 200 attempts/s against its own 200/s
    expect(s.gateway.load).toBeNull(); // a proxy
    const e = at.calls[1];
    expect(e.attemptsPerCall).toBe(2); // 100 calls and 100 retries a second
    expect(graphAt(result, 0).seconds).toBe(0.5); // the first step has no step before it
  });

  it('places loads and amplifications on the colour scale', () => {
    expect(loadShare(1)).toBe(0.5);
    expect(loadShare(null)).toBeNull();
    expect(amplificationShare(1)).toBe(0);
    expect(amplificationShare(10)).toBeCloseTo(1);
    expect(amplificationShare(0.5)).toBe(0);
  });

  it('finds the step of a time', () => {
    expect(stepAt(result, 1.5)).toBe(3);
    expect(stepAt(result, 1.2)).toBe(2);
    expect(stepAt(result, -1)).toBe(0);
  });
});

describe('scenario paths', () => {
  it('reads and writes a list item by index, as the keys of a graph name calls', () => {
    const sc: Record<string, unknown> = { calls: [{ from: 'user', to: 'a' }, { from: 'a', to: 'b', budget: { kind: 'window' } }] };
    expect(getPath(sc, 'calls[1].to')).toBe('b');
    setPath(sc, 'calls[1].retries', 0);
    expect((sc.calls as Record<string, unknown>[])[1].retries).toBe(0);
    setPath(sc, 'calls[1].budget.kind', undefined);
    expect((sc.calls as Record<string, unknown>[])[1].budget).toEqual({});
    setPath(sc, 'services.db.queue_limit', 200);
    expect(getPath(sc, 'services.db.queue_limit')).toBe(200);
    setPath(sc, 'nothing.here', undefined);
    expect('nothing' in sc).toBe(false);
    expect(Object.keys(sc)).toEqual(['calls', 'services']);
  });
});
