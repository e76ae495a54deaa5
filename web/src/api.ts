// Calls to the HTTP API of `retrystorm serve` (same origin). Each kind of call
// keeps one AbortController so a newer request cancels the stale one.

import type { LadderRow, MonteCarloBatch, Preset, RiskMap, RunResult, StepDownResult, Scenario, SchemaKey, SweepRow, Tipping, TraceStep } from './types';

/** What POST /api/import answers: scenario keys, and what it noticed. */
export interface ImportResult {
  keys: Record<string, string | number | boolean>;
  warnings: string[];
  formats: string[];
}

export class ApiError extends Error {
  /** busy: the server had no room for it now (`"busy": true`), worth the same
   * request again after retryAfterS (its Retry-After, in seconds). */
  constructor(message: string, readonly status: number, readonly busy = false, readonly retryAfterS: number | null = null) {
    super(message);
  }
}

const base = (() => {
  // Works both at `/` and under a sub-path.
  const p = location.pathname.replace(/[^/]*$/, '');
  return p.endsWith('/') ? p : `${p}/`;
})();

async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await fetch(`${base}api/${path}`, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ApiError(`${path}: HTTP ${res.status}: ${text.slice(0, 200)}`, res.status);
  }
  if (!res.ok) {
    const msg = (data as { error?: string })?.error ?? `HTTP ${res.status}`;
    const after = Number(res.headers.get('Retry-After'));
    const busy = (data as { busy?: boolean })?.busy === true;
    throw new ApiError(msg, res.status, busy, res.headers.has('Retry-After') && Number.isFinite(after) ? after : null);
  }
  return data as T;
}

const controllers = new Map<string, AbortController>();

/** Runs `fn` with a fresh signal for `kind`, aborting the previous one. */
function latest<T>(kind: string, fn: (s: AbortSignal) => Promise<T>): Promise<T> {
  controllers.get(kind)?.abort();
  const c = new AbortController();
  controllers.set(kind, c);
  return fn(c.signal);
}

export const isAbort = (e: unknown) => e instanceof DOMException && e.name === 'AbortError';

/** Sends a scenario without the fields the server fills itself. */
const body = (sc: Scenario, extra: Record<string, unknown> = {}) => ({ scenario: sc, ...extra });

export const api = {
  presets: () => call<{ presets: Preset[] }>('GET', 'presets').then((r) => r.presets),
  schema: () => call<{ keys: SchemaKey[] }>('GET', 'schema').then((r) => r.keys),
  /** The run without its trace (the chart needs none); see trace(). */
  run: (sc: Scenario) => latest('run', (s) => call<RunResult>('POST', 'run', body(sc, { trace: false, sessions: false, advice: false }), s)),
  /** A pinned run made again from its inputs (a pin from the link): the run alone, as the chart needs it. */
  pinRun: (sc: Scenario, id: string) => latest(`pin-${id}`, (s) => call<RunResult>('POST', 'run', body({ ...sc, runs: 1 }, { trace: false, sessions: false, advice: false }), s)),
  /** The next batch of an agent Monte Carlo after `done` runs (the page has drawn replication 0 already). */
  montecarlo: (sc: Scenario, done: number) => latest('montecarlo', (s) => call<MonteCarloBatch>('POST', 'montecarlo', body(sc, { done }), s)),
  /** Stops the Monte Carlo under way: the server stops the batch whose caller has gone. */
  stopMonteCarlo: () => controllers.get('montecarlo')?.abort(),
  /** Aborts the calls of these kinds under way: their answers are of inputs no longer on screen. */
  abort: (...kinds: string[]) => { for (const k of kinds) controllers.get(k)?.abort(); },
  /** Advice and the tipping point of a run, asked after its chart is drawn. */
  advice: (sc: Scenario) => latest('advice', (s) => call<{ advice: NonNullable<RunResult['advice']>; tipping?: Tipping }>('POST', 'advice', body(sc), s)),
  trace: (sc: Scenario) => latest('trace', (s) => call<{ trace: TraceStep[] }>('POST', 'trace', body(sc), s).then((r) => r.trace)),
  ladder: (sc: Scenario) => latest('ladder', (s) => call<{ rows: LadderRow[] }>('POST', 'ladder', body(sc), s)),
  tipping: (sc: Scenario) => latest('tipping', (s) => call<Tipping>('POST', 'tipping', body(sc), s)),
  sweep: (sc: Scenario, vary: { path: string; from: number; to: number; step: number }[]) =>
    latest('sweep', (s) => call<{ rows: SweepRow[] }>('POST', 'sweep', body(sc, { vary }), s)),
  /** One policy's attempts per request against an injected failure rate (POST /api/sweep). */
  amplification: (sc: Scenario, policy: number, shares: { from: number; to: number; step: number }) =>
    latest(`amplification-${policy}`, (s) => call<{ rows: SweepRow[] }>('POST', 'sweep', body(sc, { vary: [{ path: 'server.error_share', ...shares }] }), s)),
  /** The metastable region: risk at each load and each value of one knob (POST /api/risk). */
  risk: (sc: Scenario, loads: number[], runs: number, vary: string) =>
    latest('risk', (s) => call<RiskMap>('POST', 'risk', body(sc, { loads, runs, vary, exact: false }), s)),
  /** The hysteresis loop: the load stepped up until it tips and back down (POST /api/step-down). */
  stepDown: (sc: Scenario, opts: { from: number; to: number; step: number; runs: number }) =>
    latest('step-down', (s) => call<StepDownResult>('POST', 'step-down', body(sc, opts), s)),
  envoy: (sc: Scenario) => call<{ yaml: string }>('POST', 'export/envoy', body(sc)),
  /** The client policy as envoy, grpc, istio, linkerd or aws configuration; of one call of a graph. */
  exportConfig: (system: string, sc: Scenario, callIndex?: number) =>
    latest('export', (s) => call<{ text: string; notes?: string[]; extension?: string }>('POST', `export/${system}`, body(sc, callIndex === undefined ? {} : { call: callIndex }), s)),
  importConfigs: (files: { name: string; text: string }[]) =>
    call<ImportResult>('POST', 'import', { files }),
};
