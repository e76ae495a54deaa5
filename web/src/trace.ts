// The decision trace player: how many steps are visible, and which is current.

export interface TraceState { total: number; visible: number }

export const traceStart = (s: TraceState): TraceState => ({ ...s, visible: Math.min(1, s.total) });
export const traceNext = (s: TraceState): TraceState => ({ ...s, visible: Math.min(s.total, s.visible + 1) });
export const traceAll = (s: TraceState): TraceState => ({ ...s, visible: s.total });
export const traceSeek = (s: TraceState, n: number): TraceState => ({
  ...s,
  visible: Math.max(0, Math.min(s.total, Math.round(n))),
});
/** Index of the step the chart cursor follows, or -1 when none is shown. */
export const traceCurrent = (s: TraceState): number => s.visible - 1;
