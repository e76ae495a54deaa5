// Shapes of the HTTP API answers (../../shared/spec/contract.md, "HTTP API").

export type Scenario = Record<string, unknown> & {
  name?: string;
  description?: string;
  horizon_s: number;
  step_s: number;
  demand: { rate_per_s: number };
  server: { capacity_per_s: number; queue_limit: number; shed_abandoned: boolean };
  incident: { start_s: number; duration_s: number; capacity_factor: number; demand_factor: number };
  client: {
    timeout_s: number;
    layers: number;
    retries: number;
    backoff: { base_s: number; multiplier: number; cap_s: number; jitter: string };
    budget: { kind: string; ratio: number; window_s: number };
  };
  recovery?: { goodput_fraction?: number; criterion?: 'failures' | 'goodput' };
};

export interface Preset { name: string; description: string; scenario: Scenario }

export interface SchemaKey {
  path: string;
  type: 'integer' | 'number' | 'boolean' | 'enum' | string;
  min?: number;
  min_exclusive?: boolean;
  max?: number;
  step?: number;
  unit?: string;
  group?: string;
  label?: string;
  help?: string;
  values?: string[];
  /** Shown only when the key at `when.path` has one of `when.values`. */
  when?: { path: string; values: string[] };
}

export interface Metrics {
  user_requests: number;
  failed: number;
  failed_fraction: number;
  wasted_fraction: number;
  peak_amplification: number;
  peak_step_t_s?: number;
  goodput_recovery_s: number | null;
  failure_recovery_s: number | null;
  backlog_growing: boolean;
  recovered?: boolean;
  last_window?: { seconds: number; goodput_per_s: number; utilization: number; attempts_per_request: number };
  bound: { max_amplification: number; safe_load_below: number; load?: number };
}

export type SeriesName =
  | 't_s' | 'capacity' | 'first_attempts' | 'retries' | 'goodput' | 'served_late'
  | 'failed' | 'shed' | 'rejected' | 'backlog' | 'gave_up' | 'budget_denied';

export type Series = Partial<Record<SeriesName, number[]>> & { t_s: number[] };

export interface TraceStep { t_s: number; text: string }

export interface RunResult {
  scenario: Scenario;
  metrics: Metrics;
  verdict?: { recovered: boolean; headline: string; detail: string };
  series: Series;
  goodput_table?: { t_s: number; phase: string; goodput_per_s: number }[];
  advice?: { title: string; why: string; change?: Record<string, unknown>; recovers?: boolean; failed_fraction?: number }[];
  tipping?: Tipping; // some servers include the tipping point in the run
  trace?: TraceStep[];
}

export interface LadderRow {
  name: string;
  change: string;
  set?: Record<string, unknown>;
  scenario?: Scenario;
  metrics: Metrics;
}

export interface Tipping { grid_s: number; on_grid_s: number | null; exact_s: number | null }

export interface SweepRow { values: Record<string, number>; metrics: Metrics }
