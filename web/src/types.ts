// Shapes of the HTTP API answers (docs/http-api.md and docs/cli.md).
// tests/page_types_test.cpp checks them against the server's answers: every
// key sent is declared here, every field not marked `?` is sent.

export type Scenario = Record<string, unknown> & {
  name?: string;
  description?: string;
  horizon_s: number;
  step_s: number;
  demand: { rate_per_s: number };
  server: { capacity_per_s: number; queue_limit: number; shed_abandoned: boolean };
  incident: { start_s: number; duration_s: number; capacity_factor: number; demand_factor: number; random_per_h?: number };
  client: {
    timeout_s: number;
    layers: number;
    retries: number;
    stack_retries?: string; // "2,1": retries per layer, outermost first; overrides layers and retries

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
  /** Values must be whole multiples of this key's value (`step_s`). */
  multiple_of?: string;
  unit?: string;
  group?: string;
  label?: string;
  help?: string;
  values?: string[];
  /** Shown only when the key at `when.path` has one of `when.values`, or (`present`) when that part of the scenario is not empty. */
  when?: { path: string; values?: string[]; present?: boolean };
}

export interface Metrics {
  user_requests: number;
  failed: number;
  failed_fraction: number;
  succeeded?: number;
  in_flight?: number;
  served?: number;
  served_on_time?: number;
  served_late?: number;
  shed?: number;
  rejected?: number;
  budget_denied?: number;
  wasted_fraction: number;
  peak_amplification: number;
  peak_step_t_s?: number;
  goodput_recovery_s: number | null;
  failure_recovery_s: number | null;
  backlog_growing: boolean;
  recovered?: boolean;
  last_window?: { seconds: number; goodput_per_s: number; utilization: number; attempts_per_request: number };
  bound: { max_amplification: number; safe_load_below: number; load?: number };
  /** Per-request engines; null for the fluid model, which knows amounts, not requests. */
  latency_s?: { p50: number | null; p90: number | null; p99: number | null };
}

export type SeriesName =
  | 't_s' | 'capacity' | 'first_attempts' | 'retries' | 'goodput' | 'served_late'
  | 'failed' | 'shed' | 'rejected' | 'backlog' | 'gave_up' | 'budget_denied' | 'refused_locally'
  | 'pooled';

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
  engine?: string;
  montecarlo?: MonteCarlo; // agent engine with runs > 1 (may be absent)
  warnings?: string[]; // keys the scenario's engine does not use
  graph?: GraphResult; // a scenario with services and calls (docs/graph.md)
}

/** Per-step amounts of one service of a graph run (`graph.services[]`). */
export interface GraphServiceResult {
  name: string;
  serves: boolean; // false: a proxy, no server of its own
  totals: Record<string, number>;
  series: Record<'first_attempts' | 'retries' | 'served' | 'late' | 'rejected' | 'shed' | 'failed' | 'queue', number[]>;
}

/** Per-step amounts of one call of a graph run (`graph.edges[]`, in the order of `calls`). */
export interface GraphEdgeResult {
  from: string;
  to: string;
  totals: Record<string, number>;
  series: Record<'calls' | 'retries' | 'timeouts' | 'failed' | 'denied' | 'delayed' | 'aborted' | 'paced', number[]>;
}

export interface GraphResult {
  services: GraphServiceResult[];
  edges: GraphEdgeResult[];
  incident_service?: string | null; // the service the top-level series describe
}

export interface LadderRow {
  name: string;
  change: string;
  set?: Record<string, unknown>;
  scenario?: Scenario;
  metrics: Metrics;
  verdict?: { recovered: boolean; headline: string };
  goodput_per_s?: number[]; // on-time goodput per second in up to 60 buckets (sparkline)
}

export interface Tipping { grid_s: number; on_grid_s: number | null; exact_s: number | null }

export interface SweepRow { values: Record<string, number>; metrics: Metrics }

/** One load of POST /api/risk (docs/risk.md): shares with 95% intervals, waiting times in seconds. */
export interface RiskShare { k: number; n: number; p: number; low: number; high: number }
export interface RiskWait { events: number; exposure_s: number; mean_s: number | null; low_s: number; high_s: number | null; within_hour: RiskShare; within_day: RiskShare }
export interface RiskLevel {
  load: number;
  demand_per_s: number;
  tipped_within_horizon: RiskShare;
  time_to_tip: RiskWait;
  stuck_to_leave: RiskShare;
  left_within_horizon: RiskShare;
  time_to_leave: RiskWait;
  /** Which case time_to_leave is (its mean_s is null in the first two): no run stuck, none back by the horizon, or a mean. */
  leave: 'none' | 'never' | 'measured';
}
/** One run of the step-down experiment (POST /api/step-down). */
export interface StepDownRun {
  seed: number;
  tipped_s: number | null;
  tipped_load: number | null;
  stuck_at_top: boolean;
  recovered_s: number | null;
  recovered_load: number | null;
}

/** The hysteresis loop: the load stepped up and back down (docs/risk.md). */
export interface StepDownResult {
  loads: number[];
  hold_s: number;
  horizon_s: number;
  engine: string;
  stuck_rule: { backlog_above: number; goodput_below: number; window_s: number; text: string };
  tipping_load: number | null;
  recovery_load: number | null;
  runs: StepDownRun[];
  series: Series;
}

export interface RiskMap { knob: string; operating_value: number; rows: { value: number; levels: RiskLevel[] }[] }

/** Mean and 95% interval of one figure over Monte Carlo replications (null: never happened). */
export interface MetricInterval {
  mean: number | null;
  low: number | null;
  high: number | null;
  n: number;
  /** Per seed: the spread the interval of the mean hides. */
  min?: number | null;
  median?: number | null;
  max?: number | null;
}

/** `montecarlo` of a run with runs > 1 (agent: goodput band; sessions: in-flight band). */
export interface MonteCarlo {
  runs: number;
  seed: number;
  metrics: Record<string, MetricInterval>;
  band?: Record<string, number[]>;
  /** Sessions: the seeds in which the reported run's headline claim holds. */
  headline_claim?: { claim: string; seeds: number; runs: number };
}

/** POST /api/montecarlo: the next batch of an agent Monte Carlo and the summary of the first `done` runs. */
export interface MonteCarloBatch {
  runs: number;
  done: number;
  montecarlo: MonteCarlo;
}

/** POST /api/run for `engine: sessions` (docs/http-api.md). NaN figures arrive as null. */
export interface SessionMetrics {
  launched: number;
  completed: number;
  failed: number;
  in_flight: number;
  median_success_s: number | null;
  success_p90_s?: number | null;
  success_p99_s?: number | null;
  mean_failed_s: number | null;
  pinned_share: number | null;
  errors_429: number;
  errors_401: number;
  lines_429_per_session: number | null;
  mean_in_flight: number;
  mean_working: number;
  mean_blocked: number;
  mean_asleep: number;
  asleep_share: number | null;
  peak_in_flight: number;
  launches_429_correlation: number | null;
  items_arrived: number;
  items_done: number;
  little_l: number | null;
  little_lambda_w: number | null;
  outcomes: Record<string, number>;
  window: { from_s: number; to_s: number };
}

export interface SessionHour {
  t_s: number;
  clock?: string;
  launches: number;
  completions: number;
  failures: number;
  working: number;
  blocked: number;
  asleep: number;
  peak_in_flight: number;
  errors_429: number;
  errors_401: number;
  items_done: number;
  arrivals: number;
  queue_unread: number;
  little_lambda_w?: number;
}

export type SessionSeriesName =
  | 'working' | 'blocked' | 'asleep' | 'launches' | 'completions' | 'failures' | 'errors_429' | 'errors_401'
  | 'items_done' | 'arrivals' | 'queue_unread' | 'peak_in_flight';

export interface SessionResult {
  engine: 'sessions';
  scenario: Scenario;
  verdict?: { headline: string; claim?: string; detail?: string };
  metrics: SessionMetrics;
  ladder?: { ladder_s: number[]; total_s: number; deadline_s: number; exceeds_deadline: boolean; longer_than_deadline?: boolean; deadline_aware?: boolean };
  series: Partial<Record<SessionSeriesName, number[]>> & { t_s: number[] };
  hours?: SessionHour[];
  items?: Record<string, number>;
  sessions?: Record<string, unknown>[];
  advice?: RunResult['advice'];
  montecarlo?: MonteCarlo;
  trace?: TraceStep[];
  warnings?: string[];
}

/** What POST /api/run answers, by engine. */
export type AnyResult = RunResult | SessionResult;

export const isSessions = (r: AnyResult | null | undefined): r is SessionResult =>
  !!r && (r as { engine?: string }).engine === 'sessions';
