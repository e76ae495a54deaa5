import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { legendStops, recoveryColor, STUCK_COLOR } from './colorscale';
import { niceStep, parseControl, stepValue } from './controls';
import { debounce } from './debounce';
import { axisFromRange, defaultAxis, gridOf } from './phaseaxes';
import { addArrays, goodputBand, goodputBandLabel, loadData, loadLabels, nearestIndex, perSecond } from './series';
import { traceAll, traceCurrent, traceDrawable, traceNext, traceSeek, traceStart } from './trace';
import type { GraphServiceResult, Metrics, RunResult, Scenario, SchemaKey, SweepRow } from './types';

describe('per-second conversion', () => {
  it('divides per-step amounts by the step', () => {
    expect(perSecond([30, 60, 0], 0.05, 3)).toEqual([600, 1200, 0]);
    expect(perSecond(undefined, 1, 2)).toEqual([0, 0]);
    expect(perSecond([1], 1, 2)).toEqual([1, 0]);
    expect(addArrays([1, 2], [3, 4])).toEqual([4, 6]);
  });

  it('builds the chart data: stack, bound, timeout work', () => {
    const r = {
      scenario: { step_s: 0.5, demand: { rate_per_s: 600 }, server: { capacity_per_s: 1000 }, client: { timeout_s: 1 } } as unknown as Scenario,
      metrics: { bound: { max_amplification: 3 } } as Metrics,
      series: { t_s: [0, 0.5], first_attempts: [300, 300], retries: [0, 150], capacity: [500, 0], goodput: [300, 0], served_late: [0, 0], backlog: [0, 450], failed: [0, 0] },
    } as RunResult;
    const d = loadData(r);
    expect(d.first).toEqual([600, 600]);
    expect(d.retries).toEqual([0, 300]);
    expect(d.stackTop).toEqual([600, 900]);
    expect(d.capacity).toEqual([1000, 0]);
    expect(d.bound).toEqual([1800, 1800]);
    expect(d.backlog).toEqual([0, 450]); // an amount, not a rate
    expect(d.timeoutWork).toEqual([1000, 1000]);
    expect(d.pooled).toBeNull(); // no connection pool: no line
    const pooled = loadData({ ...r, series: { ...r.series, pooled: [0, 12] } });
    expect(pooled.pooled).toEqual([0, 12]); // a level, like the backlog
    expect(loadData({ ...r, series: { ...r.series, pooled: [0, 0] } }).pooled).toBeNull();
    // Closed-loop clients: the server's load, not demand.rate_per_s, which they do not read.
    const closed = loadData({ ...r, metrics: { bound: { max_amplification: 4, load: 0.5 } } as Metrics });
    expect(closed.bound).toEqual([2000, 2000]);
    // A graph: the level the load at its incident service can reach, bound.load × max_amplification
    // × that service's capacity (shared-database: 200 users/s, two calls each reach db at 670/s,
    // 7 attempts per call: 2800/s, 14 per user request, not 7 × 200).
    const sd = {
      ...r.scenario,
      demand: { rate_per_s: 200 },
      incident: { service: 'db' },
      services: { gw: {}, orders: { capacity_per_s: 1000 }, db: { capacity_per_s: 670 } },
      calls: [{ from: 'user', to: 'gw' }, { from: 'gw', to: 'orders' }, { from: 'orders', to: 'db', count: 2 }],
    } as unknown as Scenario;
    // The service is the one the run names (graph.incident_service): the server's pick.
    const named = { services: [], edges: [], incident_service: 'db' } as unknown as RunResult['graph'];
    const graph = loadData({ ...r, scenario: sd, graph: named, metrics: { bound: { max_amplification: 7, load: 400 / 670 } } as Metrics });
    expect(graph.bound[0]).toBeCloseTo(2800, 6);
    expect(graph.bound[1]).toBeCloseTo(2800, 6);
    // No service with a capacity to read: its users' demand, as before.
    const bare = loadData({ ...r, scenario: { ...r.scenario, services: {}, calls: [] } as unknown as Scenario, metrics: { bound: { max_amplification: 6, load: 0.5 } } as Metrics });
    expect(bare.bound).toEqual([3600, 3600]);
  });

  it("draws a graph's load line from its incident service's own arrivals", () => {
    const service = (name: string, first: number[], retries: number[]) =>
      ({ name, serves: true, totals: {}, series: { first_attempts: first, retries } }) as unknown as GraphServiceResult;
    const r = {
      scenario: { step_s: 0.5, demand: { rate_per_s: 600 }, server: { capacity_per_s: 1000 }, client: { timeout_s: 1 }, services: {}, calls: [] } as unknown as Scenario,
      metrics: { bound: { max_amplification: 3 } } as Metrics,
      // The users' requests at the entry: the db gets two calls for each.
      series: { t_s: [0, 0.5], first_attempts: [300, 300], retries: [0, 0] },
      graph: { services: [service('gw', [300, 300], [0, 0]), service('db', [600, 600], [0, 150])], edges: [], incident_service: 'db' },
    } as RunResult;
    const d = loadData(r);
    expect(d.service).toBe('db');
    expect(d.first).toEqual([1200, 1200]);
    expect(d.retries).toEqual([0, 300]);
    expect(d.stackTop).toEqual([1200, 1500]);
    expect(loadLabels(d)).toEqual({ first: 'First attempts at db', retries: 'Retries at db' });
    // No service named (or none of that name): the top-level series, as a single service's.
    for (const g of [{ ...r.graph!, incident_service: null }, { ...r.graph!, incident_service: 'cache' }]) {
      const top = loadData({ ...r, graph: g });
      expect(top.service).toBeNull();
      expect(top.first).toEqual([600, 600]);
    }
    const single = loadData({ ...r, graph: undefined });
    expect(single.first).toEqual([600, 600]);
    expect(single.retries).toEqual([0, 0]);
    expect(loadLabels(single)).toEqual({ first: 'First attempts', retries: 'Retries' });
  });

  it('converts the Monte Carlo goodput band to per-second rates like goodput', () => {
    const base = {
      scenario: { step_s: 0.5, demand: { rate_per_s: 600 }, server: { capacity_per_s: 1000 }, client: { timeout_s: 1 } } as unknown as Scenario,
      metrics: { bound: { max_amplification: 3 } } as Metrics,
      series: { t_s: [0, 0.5, 1, 1.5], goodput: [300, 0, 10, 20] },
    } as RunResult;
    // One run, the fluid engine: no band.
    expect(goodputBand(base)).toBeNull();
    expect(loadData(base).goodputBand).toBeNull();
    expect(goodputBand({ ...base, montecarlo: { runs: 4, seed: 1, metrics: {} } })).toBeNull();
    expect(goodputBand({ ...base, montecarlo: { runs: 4, seed: 1, metrics: {}, band: { goodput_low: [], goodput_high: [] } } })).toBeNull();
    const r: RunResult = {
      ...base,
      montecarlo: {
        runs: 4, seed: 1, metrics: {},
        // per step; a negative low edge (t interval of a small mean) and a short array
        band: { goodput_low: [290, -2, 4], goodput_mean: [300, 1, 5], goodput_high: [310, 4, 6] },
      },
    };
    const b = goodputBand(r)!;
    expect(b.runs).toBe(4);
    expect(b.low).toEqual([580, 0, 8, null]);
    expect(b.high).toEqual([620, 8, 12, null]);
    expect(loadData(r).goodputBand).toEqual(b);
    expect(loadData(r).goodput).toEqual([600, 0, 20, 40]); // the same unit as the band
    expect(goodputBandLabel(4)).toBe('goodput 95% interval (4 runs)');
  });

  it('finds the nearest sample', () => {
    const ts = [0, 0.05, 0.1, 0.15];
    expect(nearestIndex(ts, 0.1)).toBe(2);
    expect(nearestIndex(ts, 0.11)).toBe(2);
    expect(nearestIndex(ts, 9)).toBe(3);
    expect(nearestIndex(ts, -1)).toBe(0);
    expect(nearestIndex([], 1)).toBe(-1);
  });
});

describe('phase-map colour scale', () => {
  it('goes from green to red and keeps stuck apart', () => {
    expect(recoveryColor(0, 40)).toBe('rgb(46, 160, 90)');
    expect(recoveryColor(40, 40)).toBe('rgb(200, 50, 40)');
    expect(recoveryColor(400, 40)).toBe('rgb(200, 50, 40)');
    expect(recoveryColor(null, 40)).toBe(STUCK_COLOR);
    expect(recoveryColor(5, 0)).toBe('rgb(46, 160, 90)');
    const mid = recoveryColor(20, 40);
    expect(mid).not.toBe(recoveryColor(0, 40));
    expect(mid).not.toBe(recoveryColor(40, 40));
  });
  it('has a legend ending in stuck', () => {
    const l = legendStops(40);
    expect(l[0][0]).toBe('0 s');
    expect(l[4][0]).toBe('40 s');
    expect(l[5]).toEqual(['stuck', STUCK_COLOR]);
  });
});

describe('debounce', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('coalesces a burst into one trailing call', () => {
    const f = vi.fn();
    const d = debounce(f, 60);
    d(1); d(2); d(3);
    expect(f).not.toHaveBeenCalled();
    vi.advanceTimersByTime(59);
    expect(f).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(f).toHaveBeenCalledTimes(1);
    expect(f).toHaveBeenLastCalledWith(3);
  });

  it('with leading, runs the first call at once and the last one after', () => {
    const f = vi.fn();
    const d = debounce(f, 60, { leading: true });
    d('a');
    expect(f).toHaveBeenCalledWith('a');
    d('b'); d('c');
    expect(f).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(60);
    expect(f).toHaveBeenCalledTimes(2);
    expect(f).toHaveBeenLastCalledWith('c');
    vi.advanceTimersByTime(200);
    d('d'); // a new burst starts at once again
    expect(f).toHaveBeenCalledTimes(3);
  });

  it('cancel and flush', () => {
    const f = vi.fn();
    const d = debounce(f, 60);
    d(1); d.cancel();
    vi.advanceTimersByTime(100);
    expect(f).not.toHaveBeenCalled();
    d(2); d.flush();
    expect(f).toHaveBeenCalledWith(2);
  });
});

describe('trace player', () => {
  it('starts, steps, seeks, shows all', () => {
    let s = { total: 5, visible: 0 };
    expect(traceCurrent(s)).toBe(-1);
    s = traceStart(s);
    expect(s.visible).toBe(1);
    expect(traceCurrent(s)).toBe(0);
    s = traceNext(traceNext(s));
    expect(s.visible).toBe(3);
    s = traceSeek(s, 99);
    expect(s.visible).toBe(5);
    s = traceNext(s);
    expect(s.visible).toBe(5);
    s = traceSeek(s, -2);
    expect(s.visible).toBe(0);
    expect(traceAll(s).visible).toBe(5);
    expect(traceStart({ total: 0, visible: 0 }).visible).toBe(0);
  });

  it('draws no step of a trace that has not arrived', () => {
    // The request failed: total is the run's step count, but there are no steps to draw.
    const missing = traceAll({ total: 120, visible: 0 });
    expect(missing.visible).toBe(120);
    expect(traceDrawable(missing, null)).toEqual({ total: 120, visible: 0 });
    expect(traceCurrent(traceDrawable(traceNext(missing), null))).toBe(-1);
    // Arrived: as many as asked, never past its last step.
    expect(traceDrawable({ total: 120, visible: 7 }, 120).visible).toBe(7);
    expect(traceDrawable({ total: 120, visible: 120 }, 100).visible).toBe(100);
    expect(traceDrawable({ total: 120, visible: 3 }, 0).visible).toBe(0);
  });
});

describe('phase-map axes', () => {
  const sc = { horizon_s: 300, incident: { start_s: 60, duration_s: 20 }, demand: { rate_per_s: 80 }, client: { retries: 3 } } as unknown as Scenario;
  it('gives 40 cells for number keys', () => {
    const a = defaultAxis({ path: 'incident.duration_s', type: 'number', min: 0 }, sc);
    expect(a.from).toBeCloseTo(1);
    expect(a.to).toBeCloseTo(40);
    expect(Math.round((a.to - a.from) / a.step) + 1).toBe(40);
    const d = defaultAxis({ path: 'demand.rate_per_s', type: 'number', min: 0, min_exclusive: false }, sc);
    expect(d.from).toBeCloseTo(4);
    expect(d.to).toBeCloseTo(160);
  });
  it('never starts at an exclusive minimum', () => {
    const a = defaultAxis({ path: 'server.capacity_per_s', type: 'number', min: 0, min_exclusive: true }, { ...sc, server: { capacity_per_s: 100 } } as unknown as Scenario);
    expect(a.from).toBeGreaterThan(0);
  });
  it('keeps integer axes on whole numbers', () => {
    const a = defaultAxis({ path: 'client.retries', type: 'integer', min: 0, max: 100 }, sc);
    expect(a).toEqual({ path: 'client.retries', from: 0, to: 6, step: 1 });
    const b = axisFromRange({ path: 'client.retries', type: 'integer' }, 0, 100);
    expect(Number.isInteger(b.step)).toBe(true);
    expect((b.to - b.from) / b.step + 1).toBeLessThanOrEqual(40);
    // The last value stays within the range asked for (0 to 50 went to 78,
    // 0 to 100 to 117, past the key's maximum).
    expect(axisFromRange({ path: 'client.retries', type: 'integer' }, 0, 50)).toEqual({ path: 'client.retries', from: 0, to: 50, step: 2 });
    for (const top of [7, 39, 40, 41, 50, 77, 100, 117]) {
      const c = axisFromRange({ path: 'client.retries', type: 'integer' }, 0, top);
      expect(c.to).toBeLessThanOrEqual(top);
      expect((c.to - c.from) / c.step + 1).toBeLessThanOrEqual(40);
    }
  });
  it('places rows on a grid whatever their order', () => {
    const rows: SweepRow[] = [];
    for (const y of [2, 1]) for (const x of [0.30000000000000004, 0.1, 0.2]) rows.push({ values: { x, y }, metrics: { failure_recovery_s: x * y } as Metrics });
    const g = gridOf(rows, 'x', 'y');
    expect(g.xs).toEqual([0.1, 0.2, 0.3]);
    expect(g.ys).toEqual([1, 2]);
    expect(g.cells[1][2]?.values).toEqual({ x: 0.30000000000000004, y: 2 });
    expect(g.cells[0][0]?.values).toEqual({ x: 0.1, y: 1 });
  });
});

describe('controls', () => {
  const num: SchemaKey = { path: 'incident.duration_s', type: 'number', min: 0 };
  const int: SchemaKey = { path: 'client.retries', type: 'integer', min: 0, max: 100, step: 1 };
  it('parses control text', () => {
    expect(parseControl(num, '12.5')).toBe(12.5);
    expect(parseControl(num, '')).toBeUndefined();
    expect(parseControl(num, 'abc')).toBeUndefined();
    expect(parseControl(int, '2.5')).toBeUndefined();
    expect(parseControl({ path: 'b', type: 'boolean' }, true)).toBe(true);
    expect(parseControl({ path: 'e', type: 'enum' }, 'full')).toBe('full');
  });
  it('steps by the value magnitude when the schema has no step', () => {
    expect(niceStep(20)).toBe(1);
    expect(niceStep(600)).toBe(10);
    expect(niceStep(0.4)).toBeCloseTo(0.01);
    expect(niceStep(0)).toBe(0.1);
    expect(stepValue(num, 20, 1, false)).toBe(21);
    expect(stepValue(num, 20, 1, true)).toBe(30);
    expect(stepValue(num, 0, -1, false)).toBe(0);
    expect(stepValue(int, 100, 1, false)).toBe(100);
    expect(stepValue({ ...num, min_exclusive: true }, 0.1, -1, false)).toBeCloseTo(0.09);
  });
});

import { isRelevant } from './controls';

describe('isRelevant', () => {
  const key = { path: 'client.budget.max_tokens', type: 'number', when: { path: 'client.budget.kind', values: ['grpc_throttling'] } };
  it('shows a budget parameter only with its budget', () => {
    expect(isRelevant(key, { client: { budget: { kind: 'grpc_throttling' } } } as never)).toBe(true);
    expect(isRelevant(key, { client: { budget: { kind: 'window' } } } as never)).toBe(false);
    expect(isRelevant({ path: 'client.retries', type: 'integer' }, {} as never)).toBe(true);
    const graphOnly = { path: 'incident.call', type: 'integer', when: { path: 'services', present: true } } as never;
    expect(isRelevant(graphOnly, {} as never)).toBe(false);
    expect(isRelevant(graphOnly, { services: {} } as never)).toBe(false);
    expect(isRelevant(graphOnly, { services: { db: { capacity_per_s: 100 } } } as never)).toBe(true);
    const hosts = { path: 'client.outlier_5xx', type: 'integer', when: { path: 'server.hosts', values: ['2', '3'] } } as never;
    expect(isRelevant(hosts, { server: { hosts: 3 } } as never)).toBe(true);
    expect(isRelevant(hosts, { server: { hosts: 1 } } as never)).toBe(false);
  });
  it('needs the key it depends on to matter too', () => {
    const engine = { path: 'demand.clients', type: 'integer', when: { path: 'engine', values: ['fluid', 'agent'] } } as never;
    const rate = { path: 'demand.rate_per_s', type: 'number', when: { path: 'demand.clients', values: ['0'] } } as never;
    const keys = [engine, rate];
    expect(isRelevant(rate, { engine: 'agent', demand: { clients: 0 } } as never, keys)).toBe(true);
    expect(isRelevant(rate, { engine: 'agent', demand: { clients: 40 } } as never, keys)).toBe(false);
    expect(isRelevant(rate, { engine: 'sessions', demand: { clients: 0 } } as never, keys)).toBe(false);
    expect(isRelevant(rate, { engine: 'sessions', demand: { clients: 0 } } as never)).toBe(true);
  });
});
