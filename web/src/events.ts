// The moments a run's story turns on, from its series: the charts annotate
// them, the trace jumps to them, the summary table lists them.

import { criterionOf, fmtNum, fmtTime, recoveryOf } from './format';
import type { RunResult } from './types';

export type MomentKind = 'incident' | 'overload' | 'give-up' | 'failed' | 'budget' | 'incident-end' | 'recovery' | 'never' | 'peak';

export interface Moment { kind: MomentKind; t: number; label: string; text: string }

/** First index from `from` where pred holds, or -1. */
function firstIndex(n: number, pred: (i: number) => boolean, from = 0): number {
  for (let i = from; i < n; i++) if (pred(i)) return i;
  return -1;
}

interface GraphKeys {
  services?: Record<string, { capacity_per_s?: number }>;
  calls?: { to: string; timeout_s?: number }[];
}

/** One timeout of work at the server's normal capacity: above it every answer
 * is late. A graph's series describe its incident service: that service's
 * capacity, and the longest timeout of the calls into it (a call without one
 * has the client's). */
export function timeoutWork(r: RunResult): number {
  const sc = r.scenario;
  const service = r.graph?.incident_service;
  const g = sc as unknown as GraphKeys;
  if (!service || !g.services?.[service]) return sc.server.capacity_per_s * sc.client.timeout_s;
  const capacity = g.services[service].capacity_per_s ?? sc.server.capacity_per_s;
  const timeouts = (g.calls ?? []).filter((c) => c.to === service).map((c) => c.timeout_s ?? sc.client.timeout_s);
  return capacity * (timeouts.length ? Math.max(...timeouts) : sc.client.timeout_s);
}

/** The moments in time order; "never" sits at the end of the run. */
export function moments(r: RunResult): Moment[] {
  const s = r.series;
  const sc = r.scenario;
  const n = s.t_s.length;
  const out: Moment[] = [];
  const start = sc.incident.start_s;
  const end = start + sc.incident.duration_s;
  const within = Math.min(end, sc.horizon_s);
  out.push({ kind: 'incident', t: start, label: 'incident', text: `The incident starts: capacity ×${fmtNum(sc.incident.capacity_factor)}, demand ×${fmtNum(sc.incident.demand_factor)} until ${fmtTime(within)} s.` });
  const work = timeoutWork(r);
  const b = s.backlog ?? [];
  const over = firstIndex(n, (i) => (b[i] ?? 0) >= work && work > 0);
  if (over >= 0) out.push({ kind: 'overload', t: s.t_s[over], label: 'queue > 1 timeout', text: `The queue passes one timeout of work (${fmtNum(work, 0)}): from here every answer comes too late and becomes a retry.` });
  const gave = s.gave_up ?? [];
  const g = firstIndex(n, (i) => (gave[i] ?? 0) > 0);
  // gave_up counts attempts whose caller stopped waiting (most are retried);
  // failed counts requests that ran out of attempts: two different moments.
  if (g >= 0) out.push({ kind: 'give-up', t: s.t_s[g], label: 'first timeouts', text: 'The first attempts time out: their callers stop waiting and retry while they have retries left.' });
  const failed = s.failed ?? [];
  const f = firstIndex(n, (i) => (failed[i] ?? 0) > 0);
  if (f >= 0) out.push({ kind: 'failed', t: s.t_s[f], label: 'first failures', text: 'The first requests fail: their last attempt went unanswered or was refused.' });
  const denied = s.budget_denied ?? [];
  const d = firstIndex(n, (i) => (denied[i] ?? 0) > 0);
  if (d >= 0) out.push({ kind: 'budget', t: s.t_s[d], label: 'budget denies', text: 'The retry budget starts refusing retries.' });
  if (end < sc.horizon_s) out.push({ kind: 'incident-end', t: end, label: 'incident ends', text: 'The incident ends: capacity and demand are back to normal.' });
  const rec = recoveryOf(r.metrics, criterionOf(sc));
  if (rec !== null && end + rec <= sc.horizon_s) {
    out.push({ kind: 'recovery', t: end + rec, label: `recovered +${fmtNum(rec)} s`, text: `Recovered ${fmtNum(rec)} s after the incident ended.` });
  } else if (end < sc.horizon_s) {
    out.push({ kind: 'never', t: sc.horizon_s, label: 'never recovers', text: `Still not recovered when the run ends at ${fmtTime(sc.horizon_s)} s.` });
  }
  out.sort((a, c) => a.t - c.t);
  return out;
}

/** The next moment strictly after t (the trace's "Next event"), or null. */
export function nextMoment(list: Moment[], t: number | null): Moment | null {
  for (const m of list) if (m.kind !== 'peak' && (t === null || m.t > t + 1e-9)) return m;
  return null;
}

export interface Box { x: number; y: number; w: number; h: number }

export const overlaps = (a: Box, b: Box) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/**
 * Places a label of size w×h near (x, y0): tries rows downwards from y0, then
 * shifts left, so it hits no placed box and no forbidden box, inside `area`.
 */
export function placeLabel(w: number, h: number, x: number, y0: number, area: Box, taken: Box[]): Box {
  const clampX = (v: number) => Math.max(area.x + 2, Math.min(v, area.x + area.w - w - 2));
  const rows = Math.max(1, Math.floor((area.h - h) / (h + 2)));
  for (const dx of [0, -w - 8, w / 2]) {
    for (let k = 0; k < rows; k++) {
      const y = y0 + k * (h + 2);
      if (y + h > area.y + area.h) break;
      const box = { x: clampX(x + dx), y, w, h };
      if (!taken.some((t) => overlaps(t, box))) return box;
    }
  }
  return { x: clampX(x), y: y0, w, h };
}
