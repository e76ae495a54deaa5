import { describe, expect, it } from 'vitest';
import { clone } from './paths';
import { applySet, decodeState, decodeValue, diffScenario, encodeState } from './urlstate';
import type { Scenario, SchemaKey } from './types';
import { filterSet } from './validate';

const base = {
  name: 'order-status', horizon_s: 300, step_s: 1, service_completes: 'start',
  demand: { rate_per_s: 80 },
  server: { capacity_per_s: 100, queue_limit: 0, shed_abandoned: false },
  incident: { start_s: 60, duration_s: 20, capacity_factor: 0.4, demand_factor: 1 },
  client: { timeout_s: 5, layers: 1, retries: 3, backoff: { base_s: 1, multiplier: 2, cap_s: 0, jitter: 'none' }, budget: { kind: 'none', ratio: 0.1, window_s: 10 } },
  recovery: { goodput_fraction: 0.9, criterion: 'goodput' },
  ladder: { mode: 'single', rows: [] },
} as unknown as Scenario;

const keys: SchemaKey[] = [
  { path: 'client.retries', type: 'integer' },
  { path: 'incident.duration_s', type: 'number' },
  { path: 'server.shed_abandoned', type: 'boolean' },
  { path: 'client.backoff.jitter', type: 'enum', values: ['none', 'full', 'equal'] },
  { path: 'incident.capacity_factor', type: 'number' },
];
const types = Object.fromEntries(keys.map((k) => [k.path, k.type]));

describe('URL state', () => {
  it('carries pinned runs, names with any characters', () => {
    const st = {
      preset: 'order-status', set: [['client.retries', 0]] as [string, number | boolean | string][],
      pins: [
        { name: 'no retries; 50% & more', preset: 'primary-failover', set: [['client.retries', 0], ['client.backoff.jitter', 'full']] as [string, number | boolean | string][] },
        { name: 'as it was', preset: 'order-status', set: [] as [string, number | boolean | string][] },
      ],
    };
    const hash = encodeState(st);
    expect(hash).toBe('#preset=order-status&set=client.retries:0&pin=no%20retries%3B%2050%25%20%26%20more;primary-failover;client.retries:0,client.backoff.jitter:full&pin=as%20it%20was;order-status;');
    expect(decodeState(hash, types)).toEqual(st);
    // A pin without its preset is dropped, not guessed.
    expect(decodeState('#preset=order-status&pin=x', types).pins).toBeUndefined();
  });

  it('round-trips preset and changes', () => {
    const st = { preset: 'order-status', set: [['client.retries', 0], ['server.shed_abandoned', true], ['client.backoff.jitter', 'full'], ['incident.capacity_factor', 0.25]] as [string, number | boolean | string][] };
    const hash = encodeState(st);
    expect(hash).toBe('#preset=order-status&set=client.retries:0,server.shed_abandoned:true,client.backoff.jitter:full,incident.capacity_factor:0.25');
    expect(decodeState(hash, types)).toEqual(st);
  });

  it('keeps a malformed percent escape as text instead of throwing', () => {
    expect(decodeState('#preset=%E0%A4%A')).toEqual({ preset: '%E0%A4%A', set: [] });
    expect(decodeState('#preset=order-status&set=client.retries:%E0%A4%A,%ZZ:1', { 'client.retries': 'integer' }))
      .toEqual({ preset: 'order-status', set: [['client.retries', '%E0%A4%A'], ['%ZZ', 1]] });
  });

  it('encodes nothing for an empty state and decodes an empty hash', () => {
    expect(encodeState({ preset: null, set: [] })).toBe('');
    expect(decodeState('')).toEqual({ preset: null, set: [] });
    expect(decodeState('#preset=x')).toEqual({ preset: 'x', set: [] });
  });

  it('parses values by key type, and guesses without one', () => {
    expect(decodeValue('12.5', 'number')).toBe(12.5);
    expect(decodeValue('true', 'boolean')).toBe(true);
    expect(decodeValue('false')).toBe(false);
    expect(decodeValue('3')).toBe(3);
    expect(decodeValue('full')).toBe('full');
    expect(decodeValue('1e3', 'enum')).toBe('1e3');
  });

  it('escapes awkward characters', () => {
    const st = { preset: 'a b', set: [['x.y', 'c,d:e'] as [string, string]] };
    expect(decodeState(encodeState(st), { 'x.y': 'enum' })).toEqual(st);
  });

  it('diffs only schema keys that changed and re-applies them', () => {
    const sc = applySet(base, [['client.retries', 0], ['incident.duration_s', 12]]);
    expect(sc.client.retries).toBe(0);
    expect(base.client.retries).toBe(3); // base untouched
    const d = diffScenario(base, sc, keys);
    expect(d).toEqual([['client.retries', 0], ['incident.duration_s', 12]]);
    expect(diffScenario(base, applySet(base, d), keys)).toEqual(d);
    expect(diffScenario(base, base, keys)).toEqual([]);
  });

  it('never sets hidden keys from a link', () => {
    const sc = applySet(base, [['ladder.mode', 'cumulative'], ['name', 'evil']]);
    expect((sc.ladder as { mode: string }).mode).toBe('single');
    expect(sc.name).toBe('order-status');
  });

  it('keeps settings the page has no control for: text keys, a graph\'s calls and services', () => {
    const graph = {
      ...clone(base),
      client: { ...clone(base.client), retry_on: '' }, // the server writes every key
      services: { api: { capacity_per_s: 100 }, db: { capacity_per_s: 50, shed_abandoned: false } },
      calls: [{ from: 'user', to: 'api', retries: 0 }, { from: 'api', to: 'db', retries: 2 }],
    } as unknown as Scenario;
    const sc = applySet(graph, [['calls[1].retries', 0], ['services.db.shed_abandoned', true], ['client.retry_on', '5xx,reset']]);
    const d = diffScenario(graph, sc, keys);
    expect(d).toEqual([['client.retry_on', '5xx,reset'], ['services.db.shed_abandoned', true], ['calls[1].retries', 0]]);
    // Through the link and back: the same settings.
    const st = decodeState(encodeState({ preset: 'g', set: d }), types);
    expect(filterSet(st.set, keys, graph).kept).toEqual(d);
    expect(diffScenario(graph, applySet(graph, d), keys)).toEqual(d);
  });

  it('drops link paths that reach nothing the scenario has, or an object\'s prototype', () => {
    const { kept, ignored } = filterSet(
      [['__proto__.polluted', 1], ['constructor.prototype.x', 1], ['calls[0].retries', 1], ['nosuch.key', 1], ['name', 'evil']],
      keys, base);
    expect(kept).toEqual([]);
    expect(ignored.map((i) => i.path)).toEqual(['__proto__.polluted', 'constructor.prototype.x', 'calls[0].retries', 'nosuch.key', 'name']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Sections, inherited names, and paths deeper than any key are no settings
    // (a call path 5,000 names deep made the page fail to start).
    const graph = { ...clone(base), calls: [{ from: 'user', to: 'api' }], services: { api: {} } } as unknown as Scenario;
    const deep = `calls[0].${Array(5000).fill('a').join('.')}`;
    const odd = filterSet([['client', 3], ['demand', 'x'], ['calls[0]', 2], ['toString', 'x'], ['hasOwnProperty', 1], [deep, 1], ['services.api.toString', 1]], keys, graph);
    expect(odd.kept).toEqual([]);
    expect(odd.ignored.length).toBe(7);
  });

  it('types a call\'s or a service\'s value as the client\'s or the server\'s key is', () => {
    const graph = {
      ...clone(base),
      client: { ...clone(base.client), retry_on: '' },
      server: { ...clone(base.server), reject_status: '503' },
      calls: [{ from: 'user', to: 'api' }, { from: 'api', to: 'db' }],
      services: { api: {}, db: {} },
    } as unknown as Scenario;
    const set = diffScenario(graph, applySet(graph, [['calls[1].retry_on', '503'], ['services.db.reject_status', '429'], ['calls[1].retries', 0]]), keys);
    const st = decodeState(encodeState({ preset: 'g', set }), types);
    expect(filterSet(st.set, keys, graph).kept).toEqual([['calls[1].retry_on', '503'], ['calls[1].retries', 0], ['services.db.reject_status', '429']]);
  });

  it('treats float noise as equal', () => {
    const sc = applySet(base, [['incident.capacity_factor', 0.1 + 0.3]]);
    expect(diffScenario(base, sc, keys)).toEqual([]);
  });
});
