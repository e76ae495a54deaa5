// Checks inputs in the browser, from GET /api/schema, before anything is sent:
// a value the server would refuse (or silently round) never reaches the chart
// or the link. The server checks again (docs/http-api.md); these are its rules.

import { clone, getPath, isHidden, setPath } from './paths';
import type { Scenario, SchemaKey } from './types';
import type { Value } from './urlstate';

const UNSAFE = new Set(['__proto__', 'constructor', 'prototype']);

/** The scalar at `path` when every step is the object's own (no inherited name, no index past a list's end). */
function ownScalar(obj: unknown, path: string): Value | undefined {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    const m = /^([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)$/.exec(part);
    if (!m || UNSAFE.has(m[1])) return undefined;
    const keys: (string | number)[] = [m[1], ...[...m[2].matchAll(/\[(\d+)\]/g)].map((i) => Number(i[1]))];
    for (const k of keys) {
      if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, k)) return undefined;
      cur = (cur as Record<string | number, unknown>)[k];
    }
  }
  return typeof cur === 'number' || typeof cur === 'string' || typeof cur === 'boolean' ? cur : undefined;
}

/**
 * What a link path without a control sets, as the preset holds it: a setting
 * the scenario has (the server writes every key), or a key of one of a
 * graph's calls or services, which list only what they change and take the
 * client's or the server's keys. Undefined: no setting of this scenario.
 */
function templateOf(base: Scenario, path: string): Value | undefined {
  const own = ownScalar(base, path);
  if (own !== undefined) return own;
  const call = /^(calls\[\d+\])\.(.+)$/.exec(path);
  if (call && ownScalar(base, `${call[1]}.from`) !== undefined) return ownScalar(base, `client.${call[2]}`);
  const service = /^services\.([A-Za-z0-9_-]+)\.(.+)$/.exec(path);
  const services = getPath(base, 'services');
  if (service && services && typeof services === 'object' && Object.prototype.hasOwnProperty.call(services, service[1]))
    return ownScalar(base, `server.${service[2]}`);
  return undefined;
}

/** A link's value as the type of the setting it replaces ("503" stays text for a text key). */
function asTemplate(v: Value, template: Value): Value {
  if (typeof template === 'string') return String(v);
  if (typeof template === 'boolean') return v === true || v === 'true';
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : v; // the server names a value that is no number
}


/** A value the page accepts, or why not (in words, naming the limit). */
export type Checked = { ok: true; value: number | string | boolean } | { ok: false; error: string };

const num = (v: number) => String(Number(v.toPrecision(10)));
const EPS = 1e-9;

/** Whether v is a whole number of steps of `step` (as the server's whole_multiple). */
export function wholeSteps(v: number, step: number): boolean {
  if (!(step > 0)) return true;
  const n = v / step;
  return Math.abs(n - Math.round(n)) <= EPS * Math.max(1, Math.abs(n));
}

/** The step a key's value moves by: step_s for keys counted in steps, else the schema's. */
export function keyStep(key: SchemaKey, sc: Scenario | null): number | undefined {
  if (key.multiple_of && sc) {
    const s = Number(getPath(sc, key.multiple_of));
    if (s > 0) return s;
  }
  return key.step && key.step > 0 ? key.step : undefined;
}

/** Checks one typed or decoded value against the key's type, range and step. */
export function checkValue(key: SchemaKey, raw: unknown, sc: Scenario | null): Checked {
  if (key.type === 'boolean') {
    if (typeof raw === 'boolean') return { ok: true, value: raw };
    if (raw === 'true' || raw === 'false') return { ok: true, value: raw === 'true' };
    return { ok: false, error: 'must be true or false' };
  }
  if (key.type === 'enum' || key.values) {
    const s = String(raw);
    return key.values && !key.values.includes(s) ? { ok: false, error: `must be one of ${key.values.join(', ')}` } : { ok: true, value: s };
  }
  if (key.type !== 'number' && key.type !== 'integer') return { ok: true, value: String(raw) };
  const text = String(raw).trim();
  const n = typeof raw === 'number' ? raw : text === '' ? NaN : Number(text);
  if (!Number.isFinite(n)) return { ok: false, error: text === '' ? 'needs a number' : `"${text}" is not a number` };
  if (key.type === 'integer' && !Number.isInteger(n)) return { ok: false, error: `${num(n)} is not a whole number` };
  const unit = key.unit ? ` ${key.unit}` : '';
  if (key.min !== undefined && (key.min_exclusive ? n <= key.min : n < key.min)) {
    return { ok: false, error: `${num(n)} is too small: must be ${key.min_exclusive ? 'above' : 'at least'} ${num(key.min)}${unit}` };
  }
  if (key.max !== undefined && n > key.max) return { ok: false, error: `${num(n)} is too large: must be at most ${num(key.max)}${unit}` };
  const step = key.multiple_of ? keyStep(key, sc) : undefined;
  if (step !== undefined && !wholeSteps(n, step)) {
    return { ok: false, error: `${num(n)} is not a whole number of steps of ${num(step)} s (${key.multiple_of})` };
  }
  return { ok: true, value: n };
}

/** Whether the key matters for `sc` (its `when` rule; the server's key_applies):
 * the key it depends on must matter too, when `keys` names it. */
export function isRelevant(key: SchemaKey, sc: Scenario, keys?: readonly SchemaKey[]): boolean {
  const when = key.when;
  if (!when) return true;
  const v = getPath(sc, when.path);
  if (when.present) return v != null && (typeof v !== 'object' || Object.keys(v as object).length > 0);
  if (!(when.values ?? []).includes(String(v))) return false;
  const up = keys?.find((k) => k.path === when.path);
  return !up || up === key || isRelevant(up, sc, keys);
}

/** Whether incidents come at random (incident.random_per_h): a run refuses them, risk reads them. */
export const randomIncidents = (sc: Scenario | null) => Number(sc?.incident?.random_per_h) > 0;

/** Rules that tie keys together, as validate() on the server: path -> why. */
export function checkScenario(sc: Scenario, keys: SchemaKey[]): Map<string, string> {
  const out = new Map<string, string>();
  const perStep = sc.engine !== 'sessions';
  for (const k of keys) {
    if (!k.multiple_of || (!perStep && k.path !== 'horizon_s')) continue;
    const v = getPath(sc, k.path);
    if (typeof v !== 'number') continue;
    if (!isRelevant(k, sc, keys)) continue;
    const c = checkValue(k, v, sc);
    if (!c.ok) out.set(k.path, c.error);
  }
  if (perStep && sc.incident && sc.incident.start_s >= sc.horizon_s) {
    out.set('incident.start_s', `starts at ${num(sc.incident.start_s)} s, after the run ends (${num(sc.horizon_s)} s): it would never happen`);
  }
  // The server's run refuses incidents at random (a run measures recovery from one incident).
  if (perStep && randomIncidents(sc)) {
    out.set('incident.random_per_h', 'incidents at random are for "Assess risk" below; a run follows one incident (0 to run)');
  }
  return out;
}

/** A value stepped by ↑/↓ onto the next valid value (a multiple of the step, inside the range). */
export function stepOnto(key: SchemaKey, v: number, dir: 1 | -1, big: boolean, sc: Scenario | null, fallback: (v: number) => number): number {
  let step = keyStep(key, sc) ?? fallback(v === 0 && dir < 0 ? 0 : v);
  if (big) step *= 10;
  // Onto the grid first: 5.05 goes up to 5.1, not 5.15.
  const k = v / step;
  const onGrid = Math.abs(k - Math.round(k)) <= EPS * Math.max(1, Math.abs(k));
  const idx = onGrid ? Math.round(k) + dir : dir > 0 ? Math.ceil(k) : Math.floor(k);
  let next = Number((idx * step).toPrecision(12));
  if (key.min !== undefined) {
    if (key.min_exclusive ? next <= key.min : next < key.min) next = key.min_exclusive ? v : key.min;
  }
  if (key.max !== undefined && next > key.max) next = v > key.max ? key.max : v;
  if (key.type === 'integer') next = Math.round(next);
  return next;
}

export interface Ignored { path: string; value: string; why: string }

/** The link's `set` entries the page can apply, and the ones it drops with the reason. */
export function filterSet(set: [string, Value][], keys: SchemaKey[], base: Scenario): { kept: [string, Value][]; ignored: Ignored[] } {
  const byPath = new Map(keys.map((k) => [k.path, k]));
  // A value counted in steps is of the link's own step (step_s set beside it), not the preset's.
  const steps = clone(base) as Record<string, unknown>;
  for (const [path, v] of set) {
    const k = byPath.get(path);
    const c = k && !k.multiple_of ? checkValue(k, v, base) : null;
    if (c?.ok) setPath(steps, path, c.value);
  }
  const kept: [string, Value][] = [];
  const ignored: Ignored[] = [];
  for (const [path, v] of set) {
    const k = byPath.get(path);
    if (!k) {
      // A setting the page has no control for (a text key, a graph's call or
      // service): kept when the preset has its section, typed as the preset's
      // value is; the server checks it with the run.
      const template = isHidden(path) ? undefined : templateOf(base, path);
      if (template === undefined) { ignored.push({ path, value: String(v), why: 'not a scenario key' }); continue; }
      kept.push([path, asTemplate(v, template)]);
      continue;
    }
    const c = checkValue(k, v, steps as Scenario);
    if (!c.ok) { ignored.push({ path, value: String(v), why: c.error }); continue; }
    kept.push([path, c.value as Value]);
  }
  return { kept, ignored };
}

/** The field a server error names ("client.retries: 101 ..."), if it is a schema key. */
export function errorPath(message: string, keys: SchemaKey[]): string | null {
  const m = /^([a-z_][a-z0-9_.]*):/i.exec(message);
  return m && keys.some((k) => k.path === m[1]) ? m[1] : null;
}
