// Controls built from GET /api/schema: one per key, grouped, so keys the
// server adds appear without a change here.

import { getPath, isHidden } from './paths';
import type { Scenario, SchemaKey } from './types';

export const GROUPS: [string, string][] = [
  ['incident', 'Incident'],
  ['demand_server', 'Demand & server'],
  ['client', 'Client policy'],
  ['run', 'Run & measurement'],
  ['agent', 'Randomness & runs'],
  ['sessions', 'Session model'],
];

export const controlId = (path: string) => `ctl-${path.replace(/[^a-zA-Z0-9_]/g, '-')}`;

export type OnChange = (path: string, value: unknown, ev: Event) => void;

/** Arrow-key step for a number key without a schema step: about a tenth of
 * the value's order of magnitude (20 -> 1, 0.4 -> 0.01, 600 -> 10). */
export function niceStep(v: number): number {
  const a = Math.abs(v);
  if (!Number.isFinite(a) || a === 0) return 0.1;
  return Math.pow(10, Math.floor(Math.log10(a)) - 1);
}

export function stepValue(key: SchemaKey, v: number, dir: 1 | -1, big: boolean): number {
  let step = key.step && key.step > 0 ? key.step : niceStep(v === 0 && dir < 0 ? 0 : v);
  if (big) step *= 10;
  let next = Number((v + dir * step).toPrecision(12));
  if (key.min !== undefined) next = key.min_exclusive ? (next <= key.min ? v : next) : Math.max(key.min, next);
  if (key.max !== undefined) next = Math.min(key.max, next);
  if (key.type === 'integer') next = Math.round(next);
  return next;
}

export function unitText(unit?: string): string {
  if (!unit) return '';
  return unit;
}

/** Parses a control's text as the key's type; undefined when not usable yet. */
export function parseControl(key: SchemaKey, raw: string | boolean): unknown {
  if (key.type === 'boolean') return Boolean(raw);
  if (key.type === 'enum' || key.type === 'string' || key.type === 'text') return String(raw);
  const s = String(raw).trim();
  if (s === '') return undefined;
  const n = Number(s);
  if (!Number.isFinite(n)) return undefined;
  if (key.type === 'integer' && !Number.isInteger(n)) return undefined;
  return n;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Whether a key matters for this scenario (budget parameters of another budget do not). */
export function isRelevant(key: SchemaKey, sc: Scenario): boolean {
  if (!key.when) return true;
  return key.when.values.includes(String(getPath(sc, key.when.path)));
}

export class Controls {
  private inputs = new Map<string, { key: SchemaKey; main: HTMLInputElement | HTMLSelectElement; range?: HTMLInputElement; row: HTMLElement }>();

  constructor(private root: HTMLElement, private keys: SchemaKey[], private onChange: OnChange) {
    this.build();
  }

  private build() {
    this.root.replaceChildren();
    const known = new Set(GROUPS.map((g) => g[0]));
    const groups = [...GROUPS];
    for (const k of this.keys) if (k.group && !known.has(k.group)) { groups.push([k.group, k.group]); known.add(k.group); }
    for (const [gid, gtitle] of groups) {
      const keys = this.keys.filter((k) => !isHidden(k.path) && (k.group ?? 'run') === gid);
      if (!keys.length) continue;
      const wrap = gid === 'run' ? el('details', { class: 'group', 'data-group': gid }) : el('fieldset', { class: 'group', 'data-group': gid });
      const title = gid === 'run' ? el('summary', {}, gtitle) : el('legend', {}, gtitle);
      wrap.append(title);
      for (const k of keys) wrap.append(this.row(k));
      this.root.append(wrap);
    }
  }

  private row(k: SchemaKey): HTMLElement {
    const id = controlId(k.path);
    const row = el('div', { class: `ctl ctl-${k.type}`, 'data-path': k.path });
    const label = el('label', { for: id }, k.label || k.path);
    const helpId = `${id}-help`;
    const help = el('small', { id: helpId, class: 'help' }, k.help ?? '');
    let main: HTMLInputElement | HTMLSelectElement;
    let range: HTMLInputElement | undefined;
    if (k.type === 'boolean') {
      main = el('input', { type: 'checkbox', id, 'data-testid': `ctl-${k.path}`, 'data-path': k.path, 'aria-describedby': helpId });
      main.addEventListener('change', (e) => this.onChange(k.path, (main as HTMLInputElement).checked, e));
      row.classList.add('ctl-check');
      row.append(main, label, help);
      this.inputs.set(k.path, { key: k, main, row });
      return row;
    }
    if (k.type === 'enum' || k.values) {
      const sel = el('select', { id, 'data-testid': `ctl-${k.path}`, 'data-path': k.path, 'aria-describedby': helpId });
      for (const v of k.values ?? []) sel.append(el('option', { value: v }, v.replace(/_/g, ' ')));
      sel.addEventListener('change', (e) => this.onChange(k.path, sel.value, e));
      main = sel;
      row.append(label, sel, help);
    } else {
      const inp = el('input', {
        type: 'number', id, inputmode: k.type === 'integer' ? 'numeric' : 'decimal',
        'data-testid': `ctl-${k.path}`, 'data-path': k.path, 'aria-describedby': helpId,
      });
      if (k.min !== undefined) inp.min = String(k.min);
      if (k.max !== undefined) inp.max = String(k.max);
      inp.step = k.step ? String(k.step) : k.type === 'integer' ? '1' : 'any';
      inp.addEventListener('keydown', (e) => {
        if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') return;
        const cur = Number(inp.value);
        if (!Number.isFinite(cur)) return;
        e.preventDefault();
        inp.value = String(stepValue(k, cur, e.key === 'ArrowUp' ? 1 : -1, e.shiftKey));
        inp.dispatchEvent(new Event('input', { bubbles: true }));
      });
      main = inp;
      const line = el('div', { class: 'ctl-line' });
      const span = k.min !== undefined && k.max !== undefined && k.step ? (k.max - k.min) / k.step : Infinity;
      if (span <= 400) {
        range = el('input', { type: 'range', 'aria-label': `${k.label || k.path} slider`, 'data-testid': `range-${k.path}`, tabindex: '-1' });
        range.min = String(k.min);
        range.max = String(k.max);
        range.step = String(k.step);
        const r = range;
        r.addEventListener('input', (e) => {
          inp.value = r.value;
          const v = parseControl(k, r.value);
          if (v !== undefined) this.onChange(k.path, v, e);
        });
        line.append(r);
      }
      inp.addEventListener('input', (e) => {
        const v = parseControl(k, inp.value);
        const bad = v === undefined || (k.min !== undefined && (v as number) < k.min) || (k.max !== undefined && (v as number) > k.max);
        inp.setAttribute('aria-invalid', bad ? 'true' : 'false');
        if (v === undefined) return;
        if (range) range.value = String(v);
        this.onChange(k.path, v, e);
      });
      line.append(inp);
      if (k.unit) line.append(el('span', { class: 'unit', 'aria-hidden': 'true' }, unitText(k.unit)));
      if (k.unit) inp.setAttribute('aria-label', `${k.label || k.path} (${k.unit})`);
      row.append(label, line, help);
    }
    this.inputs.set(k.path, { key: k, main, range, row });
    return row;
  }

  /** Shows the scenario's values (without firing change events). */
  set(sc: Scenario) {
    for (const [path, { key, main, range, row }] of this.inputs) {
      row.hidden = !isRelevant(key, sc);
      const v = getPath(sc, path);
      if (key.type === 'boolean') (main as HTMLInputElement).checked = Boolean(v);
      else if (v !== undefined && v !== null) {
        if (document.activeElement !== main || main.value === '' || parseControl(key, main.value) !== v) main.value = String(v);
        main.setAttribute('aria-invalid', 'false');
        if (range) range.value = String(v);
      }
    }
  }

  values(): Record<string, string | boolean> {
    const out: Record<string, string | boolean> = {};
    for (const [path, { key, main }] of this.inputs) out[path] = key.type === 'boolean' ? (main as HTMLInputElement).checked : main.value;
    return out;
  }
}
