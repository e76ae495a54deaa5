// The graph view: services as boxes and calls as arrows, coloured by load or
// amplification at the moment the time scrubber picks, and a table per hop.

import { scaleColor } from './colorscale';
import { fmtAmp, fmtNum, fmtPct, fmtTime } from './format';
import { amplificationShare, graphAt, layoutGraph, loadShare, stepAt, USER, type GraphAt } from './graphmodel';
import type { RunResult } from './types';

export type ColourBy = 'load' | 'amplification';

const SVG = 'http://www.w3.org/2000/svg';
const NODE_W = 150;
const NODE_H = 46;
const COL_W = 230;
const ROW_H = 66;
const PAD = 14;
const PROXY_COLOUR = '#d5d9dd'; // light in both themes: the box's text is dark

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A name that fits its box; the box's tooltip has it whole. */
const shortName = (n: string) => (n.length > 20 ? `${n.slice(0, 19)}…` : n);

const loadText = (l: number | null) => (l === null ? 'proxy' : Number.isFinite(l) ? `load ${fmtPct(l, 0)}` : 'load ∞ (no capacity)');
const ampText = (a: number | null) => (a === null ? '–' : fmtAmp(a));

export class GraphView {
  private result: RunResult | null = null;
  private index = 0;
  colourBy: ColourBy = 'load';

  constructor(private readonly host: HTMLElement, private readonly slider: HTMLInputElement,
    private readonly timeLabel: HTMLElement, private readonly table: HTMLTableElement) {}

  /** A new graph run: the scrubber starts at the incident service's peak. */
  show(r: RunResult) {
    this.result = r;
    const n = r.series.t_s.length;
    this.slider.max = String(Math.max(0, n - 1));
    this.slider.step = '1';
    this.index = stepAt(r, r.metrics.peak_step_t_s ?? 0);
    this.slider.value = String(this.index);
    this.renderTable(r);
    this.draw();
  }

  setIndex(i: number) {
    this.index = i;
    this.draw();
  }

  setColourBy(mode: ColourBy) {
    this.colourBy = mode;
    this.draw();
  }

  /** The figures on screen (test hook). */
  current(): GraphAt | null {
    return this.result?.graph ? graphAt(this.result, this.index) : null;
  }

  private share(s: GraphAt['services'][number]) {
    return this.colourBy === 'load' ? loadShare(s.load) : amplificationShare(s.amplification);
  }

  draw() {
    const r = this.result;
    const at = this.current();
    if (!r || !at) { this.host.replaceChildren(); return; }
    const calls = (r.scenario.calls ?? []) as { from: string; to: string; count?: number }[];
    const lay = layoutGraph(calls);
    const width = PAD * 2 + (lay.depths - 1) * COL_W + NODE_W;
    const height = PAD * 2 + (lay.rows - 1) * ROW_H + NODE_H;
    // Columns are centred on the tallest one.
    const perDepth = new Map<number, number>();
    for (const n of lay.nodes) perDepth.set(n.depth, (perDepth.get(n.depth) ?? 0) + 1);
    const place = new Map(lay.nodes.map((n) => {
      const off = ((lay.rows - (perDepth.get(n.depth) ?? 1)) * ROW_H) / 2;
      return [n.name, { x: PAD + n.depth * COL_W, y: PAD + off + n.row * ROW_H }];
    }));
    const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img', 'data-testid': 'graph-svg',
      'aria-label': `Service graph at ${fmtTime(at.t)} s, coloured by ${this.colourBy}` });
    root.style.maxWidth = `${width}px`;
    // A phone scrolls a wide graph sideways rather than shrinking its text below legibility.
    root.style.minWidth = `${Math.round(width * 0.75)}px`;
    const defs = svg('defs', {});
    // In user space: a thick arrow (many attempts per call) keeps a head of one size.
    const marker = svg('marker', { id: 'graph-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse' });
    marker.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: 'var(--fg-muted)' }));
    defs.append(marker);
    root.append(defs);
    for (const c of at.calls) root.append(this.edge(c, place.get(c.from)!, place.get(c.to)!, calls[c.index]?.count ?? 1));
    root.append(this.userNode(place.get(USER)!, at));
    for (const s of at.services) root.append(this.node(s, place.get(s.name)!));
    this.host.replaceChildren(root);
    this.timeLabel.textContent = `${fmtTime(at.t)} s`;
    this.host.dataset.t = String(at.t);
    this.host.dataset.colourBy = this.colourBy;
  }

  private node(s: GraphAt['services'][number], p: { x: number; y: number }) {
    const g = svg('g', { 'data-testid': `graph-node-${s.name}`, 'data-name': s.name });
    const share = this.share(s);
    const fill = !s.serves && this.colourBy === 'load' ? PROXY_COLOUR : share === null ? PROXY_COLOUR : scaleColor(share);
    g.append(svg('rect', { x: p.x, y: p.y, width: NODE_W, height: NODE_H, rx: 7, fill, stroke: 'var(--border)', 'data-fill': fill }));
    g.append(svg('text', { x: p.x + NODE_W / 2, y: p.y + 17, 'text-anchor': 'middle', class: 'graph-name' }, shortName(s.name)));
    const line = `${loadText(s.load)} · ${ampText(s.amplification)}`;
    g.append(svg('text', { x: p.x + NODE_W / 2, y: p.y + 34, 'text-anchor': 'middle', class: 'graph-figure' }, line));
    const title = svg('title', {}, `${s.name}: ${fmtNum(s.arrivalsPerS, 0)} attempts/s${s.capacityPerS !== null ? ` against ${fmtNum(s.capacityPerS, 0)}/s` : ''}; ${ampText(s.amplification)} the attempts of a healthy run; queue ${fmtNum(s.queue, 0)}`);
    g.append(title);
    return g;
  }

  private userNode(p: { x: number; y: number }, at: GraphAt) {
    const g = svg('g', { 'data-testid': 'graph-node-user' });
    g.append(svg('rect', { x: p.x, y: p.y, width: NODE_W, height: NODE_H, rx: 23, fill: 'var(--panel)', stroke: 'var(--fg-muted)' }));
    g.append(svg('text', { x: p.x + NODE_W / 2, y: p.y + 17, 'text-anchor': 'middle', class: 'graph-name' }, 'users'));
    const entry = at.calls.find((c) => c.from === USER);
    g.append(svg('text', { x: p.x + NODE_W / 2, y: p.y + 34, 'text-anchor': 'middle', class: 'graph-figure' }, `${fmtNum(entry?.callsPerS ?? 0, 0)} requests/s`));
    return g;
  }

  private edge(c: GraphAt['calls'][number], a: { x: number; y: number }, b: { x: number; y: number }, count: number) {
    const g = svg('g', { 'data-testid': `graph-edge-${c.index}` });
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const share = this.colourBy === 'amplification' ? amplificationShare(c.attemptsPerCall) : null;
    const stroke = share === null ? 'var(--fg-muted)' : scaleColor(share);
    const amp = c.attemptsPerCall ?? 1;
    g.append(svg('line', { x1, y1, x2, y2, stroke, 'stroke-width': Math.min(8, 1.2 + 1.5 * Math.log2(amp)), 'marker-end': 'url(#graph-arrow)' }));
    const label = `${count > 1 ? `${count} calls, ` : ''}${c.attemptsPerCall === null ? 'no calls' : `${fmtNum(c.attemptsPerCall, 2)} att./call`}`;
    // Near the callee, where arrows that leave one caller have spread apart.
    g.append(svg('text', { x: x1 + (x2 - x1) * 0.62, y: y1 + (y2 - y1) * 0.62 - 5, 'text-anchor': 'middle', class: 'graph-edge-label' }, label));
    g.append(svg('title', {}, `calls[${c.index}] ${c.from} → ${c.to}: ${fmtNum(c.callsPerS, 0)} calls/s, ${c.attemptsPerCall === null ? 'none' : fmtNum(c.attemptsPerCall, 2)} attempts per call, ${fmtNum(c.timeoutsPerS, 0)} timeouts/s, ${fmtNum(c.failedPerS, 0)} failed/s`));
    return g;
  }

  /** Whole-run figures per hop, as the text report's table (docs/graph.md). */
  private renderTable(r: RunResult) {
    const g = r.graph!;
    const row = (cells: string[], head = false) => {
      const tr = document.createElement('tr');
      for (const [i, c] of cells.entries()) {
        const td = document.createElement(head || i === 0 ? 'th' : 'td');
        if (head) td.setAttribute('scope', 'col');
        else if (i === 0) td.setAttribute('scope', 'row');
        td.textContent = c;
        tr.append(td);
      }
      return tr;
    };
    const body = this.table.tBodies[0] ?? this.table.createTBody();
    const rows = [row(['Service', 'Attempts per user request', 'Worst case', 'Served', 'Late', 'Failed', 'Peak queue'], true)];
    for (const s of g.services) {
      const t = s.totals;
      rows.push(row([s.serves ? s.name : `${s.name} (proxy)`, fmtNum(t.attempts_per_request, 2), fmtNum(t.worst_case_per_request, 0),
        fmtNum(t.served, 0), fmtNum(t.late, 0), fmtNum(t.failed, 0), fmtNum(t.peak_queue, 0)]));
    }
    rows.push(row(['Call', 'Attempts per call', 'Calls', 'Retries', 'Timeouts', 'Failed', 'Denied'], true));
    for (const [i, e] of g.edges.entries()) {
      const t = e.totals;
      rows.push(row([`calls[${i}] ${e.from} → ${e.to}`, fmtNum(t.attempts_per_call, 2), fmtNum(t.calls, 0), fmtNum(t.retries, 0),
        fmtNum(t.timeouts, 0), fmtNum(t.failed, 0), fmtNum(t.denied, 0)]));
    }
    body.replaceChildren(...rows);
  }
}
