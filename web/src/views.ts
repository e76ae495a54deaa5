// Small DOM views of the run result: verdict, cards, retry stack, advice,
// ladder, goodput table, trace list.

import { boundSentence, fmtAmp, fmtNum, fmtPct, fmtTime, ladderCells, layerRetries, plural, recoverySentence, tippingDetail, tippingText } from './format';
import { ciText } from './sessions';
import { perSecondText } from './trace';
import type { LadderRow, RunResult, Scenario, Tipping, TraceStep } from './types';

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: (Node | string)[]) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
}

function card(id: string, value: string, sub?: string) {
  const c = $(id);
  c.querySelector('.v')!.textContent = value;
  if (sub !== undefined) c.querySelector('.s')!.textContent = sub;
}

export function renderVerdict(r: RunResult) {
  const m = r.metrics;
  const sc = r.scenario;
  const v = $('verdict');
  const recovered = r.verdict?.recovered ?? m.recovered ?? false;
  v.dataset.recovered = String(recovered);
  $('verdict-headline').textContent = r.verdict?.headline ?? (recovered ? 'Recovered' : 'Not recovered');
  $('verdict-recovery').textContent = recoverySentence(m, sc);
  $('verdict-detail').textContent = r.verdict?.detail ?? '';
  card('m-failed', fmtPct(m.failed_fraction), `${fmtNum(m.failed, 0)} of ${fmtNum(m.user_requests, 0)} in ${fmtNum(sc.horizon_s)} s`);
  card('m-wasted', fmtPct(m.wasted_fraction));
  const lw = m.last_window;
  card('m-peak', fmtAmp(m.peak_amplification), lw ? `${plural(lw.attempts_per_request, 'attempt', fmtNum(lw.attempts_per_request, 2))} per request over the last ${fmtNum(lw.seconds)} s` : '');
  // Agent engine with runs > 1: mean and 95% interval over the replications.
  const mc = r.montecarlo;
  const ci = (id: string, name: string, fmt: (v: number) => string) => {
    const c = $(id);
    let span = c.querySelector<HTMLElement>('.ci');
    const iv = mc?.metrics?.[name];
    if (!iv) { span?.remove(); return; }
    if (!span) { span = h('span', { class: 'ci', 'data-testid': `${id}-ci` }); c.append(span); }
    span.textContent = `${mc!.runs} runs: ${ciText(iv, fmt)}`;
  };
  ci('m-failed', 'failed_fraction', (v) => fmtPct(v));
  ci('m-wasted', 'wasted_fraction', (v) => fmtPct(v));
  ci('m-peak', 'peak_amplification', fmtAmp);
}

export function renderTipping(t: Tipping | null) {
  card('m-tipping', tippingText(t), tippingDetail(t));
}

export function renderStack(sc: Scenario, r: RunResult | null) {
  const retries = layerRetries(sc);
  const layers = retries.length;
  const stacked = retries.some((k) => k !== retries[0]);
  // The server's bound once a run has answered (it reads client.stack_retries
  // too); the same product of (retries + 1) over the layers before that.
  const total = r?.metrics?.bound?.max_amplification ?? retries.reduce((a, k) => a * (k + 1), 1);
  const row = h('div', { class: 'stack-row', role: 'list' });
  row.append(h('div', { class: 'node user', role: 'listitem' }, 'User'));
  for (let i = 1; i <= layers; i++) {
    row.append(h('span', { class: 'arrow', 'aria-hidden': 'true' }, '→'));
    row.append(h('div', { class: 'node layer', role: 'listitem' }, h('b', {}, layers > 1 ? `Layer ${i}` : 'Caller'), h('span', {}, `×${retries[i - 1] + 1}`)));
  }
  row.append(h('span', { class: 'arrow', 'aria-hidden': 'true' }, '→'));
  row.append(h('div', { class: 'node dep', role: 'listitem' }, h('b', {}, 'Dependency'), h('span', {}, `up to ×${fmtNum(total)}`)));
  const attempts = plural(total, 'attempt', fmtNum(total));
  const formula = stacked
    ? `${retries.map((k) => `(${k} + 1)`).join(' × ')} = ${attempts} per user request at the dependency.`
    : layers > 1
      ? `(${plural(retries[0], 'retry', undefined, 'retries')} + 1)^${layers} layers = ${attempts} per user request at the dependency.`
      : `${plural(retries[0], 'retry', undefined, 'retries')} + 1 = ${attempts} per user request at most.`;
  $('stack').replaceChildren(row, h('p', { class: 'formula', 'data-testid': 'stack-formula' }, formula));
  $('bound').textContent = r ? boundSentence(r.metrics, sc, r.graph) : '';
}

/**
 * Replaces `el`'s children; the control that had the focus inside it (found
 * again by its data-testid) keeps it, so a keyboard user is not sent back to
 * the top of the page when a list is redrawn under them.
 */
export function replaceKeepingFocus(el: Element, ...children: Node[]) {
  const active = document.activeElement as HTMLElement | null;
  const id = active && el.contains(active) ? active.dataset.testid : undefined;
  el.replaceChildren(...children);
  if (id) el.querySelector<HTMLElement>(`[data-testid="${id}"]`)?.focus({ preventScroll: true });
}

export function renderAdvice(r: Pick<RunResult, 'advice'>, onApply: (change: Record<string, unknown>) => void, empty = 'Nothing to change: this policy recovers on its own.') {
  const items = (r.advice ?? []).map((a, i) => {
    const li = h('li', {}, h('b', {}, a.title), h('span', {}, ` ${a.why}`));
    if (a.change && typeof a.change === 'object' && Object.keys(a.change).length) {
      const b = h('button', { type: 'button', class: 'apply', 'data-testid': `advice-apply-${i}`, 'aria-label': `Try: ${a.title}` }, 'Try it');
      b.addEventListener('click', () => onApply(a.change!));
      li.append(b);
    }
    return li;
  });
  replaceKeepingFocus($('advice'), ...(items.length ? items : [h('li', {}, empty)]));
}

export function renderGoodputTable(r: RunResult) {
  const rows = (r.goodput_table ?? []).map((g) =>
    h('tr', { class: `phase-${g.phase}` }, h('td', {}, `${fmtTime(g.t_s)} s`), h('td', {}, g.phase), h('td', {}, fmtNum(g.goodput_per_s, 1))),
  );
  $('goodput-table').querySelector('tbody')!.replaceChildren(...rows);
}

/** A small line of a row's goodput per second, on the scale shared by every row. */
export function sparkline(values: number[] | undefined, top: number, label: string): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 80 22');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const v = values ?? [];
  if (v.length > 1 && top > 0) {
    const pl = document.createElementNS(ns, 'polyline');
    pl.setAttribute('points', v.map((y, i) => `${((i / (v.length - 1)) * 78 + 1).toFixed(1)},${(21 - (y / top) * 19).toFixed(1)}`).join(' '));
    svg.append(pl);
  }
  return svg;
}

export function renderLadder(rows: LadderRow[], sc: Scenario, mode: string, currentIndex: number, replaced: string[], onLoad: (i: number) => void) {
  // The rows start from the preset's values of every key a row sets: the
  // user's values of those are named, the rest applies to every row.
  const yours = replaced.length
    ? ` Every row starts from the preset's ${replaced.join(', ')} (rows of this ladder change ${replaced.length > 1 ? 'them' : 'it'}), not yours; your other settings apply to every row.`
    : ' Your incident, demand and run settings apply to every row.';
  $('ladder-mode').textContent = (mode === 'single'
    ? 'Each row changes one thing from the preset\'s policy; the rest stays as it is.'
    : 'Each row keeps the changes of the rows above it, starting from the preset\'s policy.') +
    yours + (rows.length && currentIndex < 0 ? ' Your current policy matches no row.' : '');
  const top = Math.max(0, ...rows.flatMap((r) => r.goodput_per_s ?? []));
  const trs = rows.map((row, i) => {
    const c = ladderCells(row, sc);
    const btn = h('button', { type: 'button', 'data-testid': `ladder-load-${i}`, class: 'ladder-load', 'aria-label': `Load ${row.name}` }, 'Load');
    btn.addEventListener('click', () => onLoad(i));
    const tr = h(
      'tr',
      { 'data-testid': `ladder-row-${i}`, class: i === currentIndex ? 'current' : '' },
      h('th', { scope: 'row' }, h('b', {}, row.name, h('em', { class: 'badge', ...(i === currentIndex ? {} : { hidden: '' }) }, 'current')), h('small', {}, row.change)),
      h('td', { class: c.recovered ? 'ok' : 'bad' }, c.verdict, sparkline(row.goodput_per_s, top, `goodput over the run: ${c.verdict}`)),
      h('td', {}, c.failed),
      h('td', {}, c.peak),
      h('td', {}, btn),
    );
    return tr;
  });
  replaceKeepingFocus($('ladder').querySelector('tbody')!, ...trs);
}

let traceFor: TraceStep[] | null = null;
let traceShown = 0;

/** Shows the first `visible` steps; adds or removes only what changed. */
export function renderTrace(steps: TraceStep[], visible: number, scroll: boolean, step = 1, total = steps.length) {
  const list = $('trace-list');
  if (traceFor !== steps) {
    list.textContent = '';
    traceShown = 0;
    traceFor = steps;
  }
  if (visible < traceShown) {
    while (list.childElementCount > visible) list.lastElementChild!.remove();
  } else if (visible > traceShown) {
    const frag = document.createDocumentFragment();
    for (let i = traceShown; i < visible; i++) {
      const s = steps[i];
      const li = document.createElement('li');
      li.dataset.i = String(i);
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'trace-time';
      b.dataset.i = String(i);
      b.textContent = `${fmtTime(s.t_s)} s`;
      const num = document.createElement('span');
      num.className = 'trace-n';
      num.textContent = `${i + 1}.`;
      const span = document.createElement('span');
      span.textContent = perSecondText(s.text, step);
      li.append(num, b, span);
      frag.append(li);
    }
    list.append(frag);
  }
  traceShown = visible;
  list.querySelector('li.current')?.classList.remove('current');
  const cur = list.children[visible - 1] as HTMLElement | undefined;
  cur?.classList.add('current');
  const slider = $<HTMLInputElement>('trace-slider');
  const n = Math.max(steps.length, total);
  slider.max = String(n);
  slider.value = String(visible);
  slider.setAttribute('aria-valuetext', `${visible} of ${n} steps shown`);
  $('trace-count').textContent = `${visible} / ${n}`;
  if (scroll && cur) cur.scrollIntoView({ block: 'nearest' });
}
