// Controls built from GET /api/schema: one per key, grouped, so keys the
// server adds appear without a change here.

import { getPath, isHidden } from './paths';
import type { Scenario, SchemaKey } from './types';
import { checkValue, isRelevant, stepOnto } from './validate';

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
/** A field holds a value the page will not send (error), or holds a good one again (null). */
export type OnInvalid = (path: string, error: string | null) => void;

/** Arrow-key step for a number key without a schema step: about a tenth of
 * the value's order of magnitude (20 -> 1, 0.4 -> 0.01, 600 -> 10). */
export function niceStep(v: number): number {
  const a = Math.abs(v);
  if (!Number.isFinite(a) || a === 0) return 0.1;
  return Math.pow(10, Math.floor(Math.log10(a)) - 1);
}

/** ↑/↓ on a number: onto the next valid value (step_s for keys counted in steps). */
export function stepValue(key: SchemaKey, v: number, dir: 1 | -1, big: boolean, sc: Scenario | null = null): number {
  return stepOnto(key, v, dir, big, sc, niceStep);
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

/** Whether a key matters for this scenario (validate.ts): here for the page's callers. */
export { isRelevant };

export class Controls {
  private inputs = new Map<string, { key: SchemaKey; main: HTMLInputElement | HTMLSelectElement; range?: HTMLInputElement; row: HTMLElement; err: HTMLElement }>();
  private sc: Scenario | null = null;

  constructor(private root: HTMLElement, private keys: SchemaKey[], private onChange: OnChange, private onInvalid: OnInvalid = () => {}) {
    this.build();
  }

  /** Marks a field as holding a value that is not applied, with the reason (null clears). */
  mark(path: string, error: string | null) {
    const c = this.inputs.get(path);
    if (!c) return;
    c.main.setAttribute('aria-invalid', error ? 'true' : 'false');
    c.row.classList.toggle('invalid', !!error);
    c.err.textContent = error ? `Not applied: ${error}` : '';
    c.err.hidden = !error;
  }

  /** Checks the typed text; sends a good value, marks a bad one. */
  private commit(k: SchemaKey, raw: string, e: Event, range?: HTMLInputElement) {
    const c = checkValue(k, raw, this.sc);
    if (!c.ok) {
      this.mark(k.path, c.error);
      this.onInvalid(k.path, c.error);
      return;
    }
    this.mark(k.path, null);
    if (range) range.value = String(c.value);
    this.onInvalid(k.path, null);
    this.onChange(k.path, c.value, e);
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
    const err = el('small', { id: `${id}-err`, class: 'field-error', role: 'alert', 'data-testid': `err-${k.path}` });
    err.hidden = true;
    let main: HTMLInputElement | HTMLSelectElement;
    let range: HTMLInputElement | undefined;
    if (k.type === 'boolean') {
      main = el('input', { type: 'checkbox', id, 'data-testid': `ctl-${k.path}`, 'data-path': k.path, 'aria-describedby': helpId });
      main.addEventListener('change', (e) => this.onChange(k.path, (main as HTMLInputElement).checked, e));
      row.classList.add('ctl-check');
      row.append(main, label, help, err);
      this.inputs.set(k.path, { key: k, main, row, err });
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
        'data-testid': `ctl-${k.path}`, 'data-path': k.path, 'aria-describedby': `${helpId} ${id}-err`,
      });
      if (k.min !== undefined) inp.min = String(k.min);
      if (k.max !== undefined) inp.max = String(k.max);
      inp.step = k.step ? String(k.step) : k.type === 'integer' ? '1' : 'any';
      if (k.multiple_of) inp.dataset.multipleOf = k.multiple_of;
      inp.addEventListener('keydown', (e) => {
        if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') return;
        const cur = Number(inp.value);
        if (!Number.isFinite(cur)) return;
        e.preventDefault();
        inp.value = String(stepValue(k, cur, e.key === 'ArrowUp' ? 1 : -1, e.shiftKey, this.sc));
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
          this.commit(k, r.value, e);
        });
        line.append(r);
      }
      inp.addEventListener('input', (e) => this.commit(k, inp.value, e, range));
      line.append(inp);
      if (k.unit) line.append(el('span', { class: 'unit', 'aria-hidden': 'true' }, unitText(k.unit)));
      if (k.unit) inp.setAttribute('aria-label', `${k.label || k.path} (${k.unit})`);
      row.append(label, line, help, err);
    }
    if (k.type === 'enum' || k.values) row.append(err);
    this.inputs.set(k.path, { key: k, main, range, row, err });
    return row;
  }

  /** Shows the scenario's values (without firing change events). */
  set(sc: Scenario, keepInvalid = false) {
    this.sc = sc;
    for (const [path, { key, main, range, row }] of this.inputs) {
      row.hidden = !isRelevant(key, sc, this.keys);
      const v = getPath(sc, path);
      if (keepInvalid && row.classList.contains('invalid')) continue;
      if (key.type === 'boolean') (main as HTMLInputElement).checked = Boolean(v);
      else if (v !== undefined && v !== null) {
        if (document.activeElement !== main || main.value === '' || parseControl(key, main.value) !== v) main.value = String(v);
        this.mark(path, null);
        if (range) range.value = String(v);
      }
    }
    // A group with nothing to show for this engine goes (agent keys on a fluid run).
    for (const g of this.root.querySelectorAll<HTMLElement>('.group')) {
      g.hidden = !g.querySelector('.ctl:not([hidden])');
    }
  }

  /** Shows a key's value: the notification time of day as a clock next to its seconds. */
  hint(path: string, text: string) {
    const c = this.inputs.get(path);
    if (!c) return;
    let h = c.row.querySelector<HTMLElement>('.hint');
    if (!h) { h = el('span', { class: 'hint', 'data-testid': `hint-${path}` }); c.main.parentElement?.append(h); }
    h.textContent = text;
  }

  values(): Record<string, string | boolean> {
    const out: Record<string, string | boolean> = {};
    for (const [path, { key, main }] of this.inputs) out[path] = key.type === 'boolean' ? (main as HTMLInputElement).checked : main.value;
    return out;
  }
}
