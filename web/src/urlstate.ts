// The shareable link: `#preset=NAME&set=path:value,path:value` lists the
// preset and only the keys that differ from it, so links stay short; each
// pinned run adds `&pin=NAME;PRESET;path:value,...` the same way.

import { clone, getPath, isHidden, setPath } from './paths';
import type { Scenario, SchemaKey } from './types';

export type Value = number | boolean | string;
/** A pinned run: its name and the inputs that make it again. */
export interface PinState { name: string; preset: string; set: [string, Value][] }
export interface UrlState { preset: string | null; set: [string, Value][]; pins?: PinState[] }

const encodeSet = (set: [string, Value][]) => set.map(([p, v]) => `${p}:${encodeValue(v)}`).join(',');
function decodeSet(text: string, types: Record<string, string>): [string, Value][] {
  const out: [string, Value][] = [];
  for (const item of text.split(',')) {
    const c = item.indexOf(':');
    if (c <= 0) continue;
    const path = decodePart(item.slice(0, c));
    out.push([path, decodeValue(item.slice(c + 1), types[path])]);
  }
  return out;
}

/**
 * decodeURIComponent that never throws: a link with a malformed escape
 * (`%E0%A4%A`) keeps the text as it is, so the page names it in the link
 * note instead of stopping at "Loading…".
 */
export function decodePart(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function encodeValue(v: Value): string {
  return encodeURIComponent(String(v));
}

/** Parses a value as the key's type; without a type, guesses. */
export function decodeValue(text: string, type?: string): Value {
  const s = decodePart(text);
  if (type === 'boolean' || (!type && (s === 'true' || s === 'false'))) return s === 'true' || s === '1';
  if (type === 'enum' || type === 'string') return s;
  const n = Number(s);
  if (type === 'integer' || type === 'number') return Number.isFinite(n) ? n : s;
  return s !== '' && Number.isFinite(n) ? n : s;
}

export function encodeState(st: UrlState): string {
  const parts: string[] = [];
  if (st.preset) parts.push(`preset=${encodeURIComponent(st.preset)}`);
  if (st.set.length) parts.push(`set=${encodeSet(st.set)}`);
  for (const pin of st.pins ?? []) parts.push(`pin=${encodeURIComponent(pin.name)};${encodeURIComponent(pin.preset)};${encodeSet(pin.set)}`);
  return parts.length ? `#${parts.join('&')}` : '';
}

export function decodeState(hash: string, types: Record<string, string> = {}): UrlState {
  const out: UrlState = { preset: null, set: [] };
  const h = hash.replace(/^#/, '');
  if (!h) return out;
  for (const part of h.split('&')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const k = part.slice(0, eq);
    const v = part.slice(eq + 1);
    if (k === 'preset') out.preset = decodePart(v);
    else if (k === 'set' && v) out.set.push(...decodeSet(v, types));
    else if (k === 'pin') {
      const [name, preset, set = ''] = v.split(';');
      if (name !== undefined && preset) (out.pins ??= []).push({ name: decodePart(name), preset: decodePart(preset), set: decodeSet(set, types) });
    }
  }
  return out;
}

const same = (a: unknown, b: unknown) =>
  typeof a === 'number' && typeof b === 'number' ? Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a)) : a === b;

/**
 * The keys whose value in `scenario` differs from `base`: the schema's first,
 * then every other setting the scenario holds (text keys such as
 * client.retry_on, a graph's calls[i].* and services.NAME.*), which a run
 * reads as well: left out, a link, a pin or Undo lost them. `others` false:
 * the schema's keys only.
 */
export function diffScenario(base: Scenario, scenario: Scenario, keys: SchemaKey[], others = true): [string, Value][] {
  const out: [string, Value][] = [];
  const schema = new Set(keys.map((k) => k.path));
  for (const k of keys) {
    if (isHidden(k.path)) continue;
    const a = getPath(base, k.path);
    const b = getPath(scenario, k.path);
    if (b === undefined) continue;
    if (!same(a, b)) out.push([k.path, b as Value]);
  }
  if (!others) return out; // a scenario the server wrote back spells out what the page's leaves implicit
  for (const [path, b] of leaves(scenario)) {
    if (schema.has(path) || isHidden(path)) continue;
    if (!same(getPath(base, path), b)) out.push([path, b]);
  }
  return out;
}

/** Every scalar in a scenario with its path ("calls[2].budget.kind"), in order. */
function leaves(v: unknown, path = '', out: [string, Value][] = []): [string, Value][] {
  if (Array.isArray(v)) v.forEach((item, i) => leaves(item, `${path}[${i}]`, out));
  else if (v !== null && typeof v === 'object')
    for (const [k, item] of Object.entries(v)) leaves(item, path ? `${path}.${k}` : k, out);
  else if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') out.push([path, v]);
  return out;
}

export function applySet(base: Scenario, set: [string, Value][]): Scenario {
  const s = clone(base);
  for (const [p, v] of set) if (!isHidden(p)) setPath(s as Record<string, unknown>, p, v);
  return s;
}
