// The decision trace player: how many steps are visible, and which is current.

export interface TraceState { total: number; visible: number }

export const traceStart = (s: TraceState): TraceState => ({ ...s, visible: Math.min(1, s.total) });
export const traceNext = (s: TraceState): TraceState => ({ ...s, visible: Math.min(s.total, s.visible + 1) });
export const traceAll = (s: TraceState): TraceState => ({ ...s, visible: s.total });
export const traceSeek = (s: TraceState, n: number): TraceState => ({
  ...s,
  visible: Math.max(0, Math.min(s.total, Math.round(n))),
});
/**
 * The state as the list can draw it: no step past the trace that has
 * arrived (loaded: its length; null when none has, as after a failed request).
 */
export const traceDrawable = (s: TraceState, loaded: number | null): TraceState => ({
  ...s,
  visible: Math.max(0, Math.min(s.visible, loaded ?? 0)),
});
/** Index of the step the chart cursor follows, or -1 when none is shown. */
export const traceCurrent = (s: TraceState): number => s.visible - 1;

/**
 * A trace line's per-step amounts as per-second rates, for models that step
 * in fractions of a second ("sent 8 new" at 0.1 s is 80/s). Levels (the
 * backlog, seconds of work, the timeout) stay as they are.
 */
export function perSecondText(text: string, step: number): string {
  if (!(step > 0) || Math.abs(step - 1) < 1e-12) return text;
  const rate = (n: string) => {
    const v = Number(n.replace(/,/g, '')) / step;
    return Number.isFinite(v) ? `${Number(v.toPrecision(6)).toLocaleString('en-US')}/s` : n;
  };
  // A number starts with a digit: a bare comma before a word is punctuation.
  return text
    .replace(/\b(capacity|budget denied|denied|rejected|shed) (\d[\d,]*(?:\.\d+)?)(?![\d.]| s\b)/g, (_m, w: string, n: string) => `${w} ${rate(n)}`)
    .replace(/(?<![~\d.,])(\d[\d,]*(?:\.\d+)?) (new|retries|retry|on time|late|reached|user requests?|shed|rejected|refused|denied)\b/g, (_m, n: string, w: string) => `${rate(n)} ${w}`);
}
