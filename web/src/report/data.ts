// The analysis the C++ program embeds in the report (analyze_json in
// src/formats/analyze_report.cpp), and the arrays the charts draw from it.

export interface HourRow {
  hour: number;
  label: string;
  launches: number;
  in_flight: number;
  little: number | null;
  completions: number;
  failures: number;
  working: number | null;
  blocked: number | null;
  asleep: number | null;
  errors: number;
}

export interface Analysis {
  unit: string;
  ceiling: number | null;
  hours: HourRow[];
  durations: { minute_completed: number[]; minute_failed: number[]; deadline_s: number | null };
  occupancy: { source: string | null };
}

/** "1d13:00": an hour since day 0, for axis ticks (the reports' clock format). */
export function hourTick(hour: number): string {
  const day = Math.floor(hour / 24);
  const h = hour - day * 24;
  return `${day}d${String(h).padStart(2, '0')}:00`;
}

/** Cumulative stacks (bottom to top) of the occupancy split; null when unknown. */
export function occupancyStacks(hours: HourRow[]): { working: number[]; blocked: number[]; asleep: number[] } | null {
  if (!hours.length || hours.some((h) => h.working === null || h.blocked === null || h.asleep === null)) return null;
  const working = hours.map((h) => h.working as number);
  const blocked = hours.map((h, i) => working[i] + (h.blocked as number));
  const asleep = hours.map((h, i) => blocked[i] + (h.asleep as number));
  return { working, blocked, asleep };
}

/** Reads the embedded analysis; throws when the page has none. */
export function readAnalysis(doc: Document): Analysis {
  const el = doc.getElementById('report-data');
  if (!el?.textContent) throw new Error('the report holds no data (#report-data)');
  return JSON.parse(el.textContent) as Analysis;
}
