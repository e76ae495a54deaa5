// The explorer page: wires the API, the controls and the views together.
// Test hooks: window.__retrystorm (see Hooks below) and data-testid attributes.

import './style.css';
import { api, ApiError, isAbort } from './api';
import { Charts, PIN_DASH, type PinLine } from './charts';
import { Controls, isRelevant } from './controls';
import { debounce } from './debounce';
import { criterionOf, fmtAmp, fmtNum, fmtPct, fmtTime, isGraph } from './format';
import { axisFromRange, defaultAxis, gridOf, gridStep, PHASE_CELLS } from './phaseaxes';
import { OccupancyChart } from './occupancy';
import { GraphView, type ColourBy } from './graphview';
import { makeView, PhaseMap } from './phasemap';
import { randomIncidents, RISK_KNOBS, RISK_LOADS, RISK_RUNS, riskBase, riskKnob, riskScenario, riskTable, riskVary, STEP_DOWN, stepDownSummary, type RiskColour } from './risk';
import { StepDownChart } from './stepdownchart';
import { AmpChart } from './ampchart';
import { AMP_POLICIES, ampScenario, ampSeries, ampSummary, SHARES } from './amplification';
import { clone, getPath, isHidden, setPath } from './paths';
import { loadData } from './series';
import { traceAll, traceCurrent, traceDrawable, traceNext, traceSeek, traceStart, type TraceState } from './trace';
import { adviceErrorText, askAgainIn, askingStoppedText, busyWaitS, ladderErrorText, refusal } from './retry';
import type { AskedView } from './retry';
import { fileBase } from './exportname';
import { renderHours, renderSessionVerdict } from './sessionview';
import { pickWindow, windowHours } from './sessions';
import { isSessions, type AnyResult, type MonteCarloBatch, type LadderRow, type Preset, type RiskMap, type RunResult, type Scenario, type SchemaKey, type SessionResult, type Tipping } from './types';
import { applySet, decodeState, diffScenario, encodeState, type PinState } from './urlstate';
import { MAX_PINS, onTimeLine, pinName, pinRows, removePin, type Pin } from './pins';
import { moments, nextMoment, timeoutWork } from './events';
import { checkScenario, errorPath, filterSet, type Ignored } from './validate';
import { clockOfDay, describeText, plural } from './format';
import {
  $, renderAdvice, renderGoodputTable, renderLadder, renderStack, renderTipping, renderTrace, renderVerdict,
} from './views';

interface Hooks {
  ready: boolean;
  lastRenderMs: number | null; // input event (or load) to load chart drawn
  renders: number;
  lastFetchMs: number | null; // request sent to answer parsed, for the last run
  lastDrawMs: number | null; // answer parsed to chart drawn, for the last run
  runs: number;
  lastPhaseMs: number | null; // "Draw phase map" click to canvas drawn
  phaseCells: number;
  phaseReady: boolean;
  riskReady: boolean;
  stepDownReady: boolean;
  ampReady: boolean;
  ladderReady: boolean;
  tippingReady: boolean;
  traceReady: boolean;
  preset: string;
  engine: string; // of the result on screen: fluid, agent or sessions
  bandShown: () => boolean; // the occupancy chart draws the Monte Carlo band
  goodputBandShown: () => boolean; // the load chart draws the Monte Carlo goodput band (agent, runs > 1)
  scenario: () => Scenario | null;
  result: () => AnyResult | null;
  ladder: () => LadderRow[];
  tipping: () => Tipping | null;
  exportData: () => unknown;
  urlHash: () => string;
  cursorT: () => number | null; // x value under the load chart's cursor
  traceT: () => number | null; // time of the current trace step
  error: string | null;
  lastMonteCarloMs: number | null; // input event to the Monte Carlo band and intervals drawn (agent, runs > 1)
  mcDone: number | null; // runs of the Monte Carlo on screen while it arrives (null: none under way)
  mcSteps: number[]; // every count of runs the progress line has shown (the tests clear it)
  notApplied: () => string | null; // why the result on screen does not match the inputs (null: it does)
  serverDown: boolean;
  linkIgnored: Ignored[]; // set entries of the link the page dropped, with the reason
  labels: () => unknown[]; // the load chart's annotations (boxes in CSS px)
  boundY: () => number | null;
  xRange: () => [number, number] | null;
  chartsAligned: () => boolean;
  timeoutLinePx: () => number | null;
  fillsOverSeries: () => number; // uPlot fills between series on the load chart (1: the retry stack only)
  exportText: () => string;
  exportFor: () => string; // the scenario (JSON) the export text was made for
  graphAt: () => ReturnType<GraphView['current']>; // the graph view's figures (null: no graph on screen)
  pins: () => { name: string; preset: string; set: PinState['set']; ready: boolean }[];
  history: () => { index: number; top: number }; // this page's place in the browser's history (undo/redo)
}

declare global {
  interface Window { __retrystorm: Hooks }
}

const S = {
  presets: [] as Preset[],
  schema: [] as SchemaKey[],
  preset: null as Preset | null,
  scenario: null as Scenario | null,
  result: null as AnyResult | null,
  sessions: false, // the page shows the session model's view
  ladder: [] as LadderRow[],
  tipping: null as Tipping | null,
  trace: { total: 0, visible: 0 } as TraceState,
  pendingT0: null as number | null, // when the change being drawn was made
  seq: 0,
  keepLadder: false, // a ladder row was loaded: keep showing the table it came from
  invalid: new Map<string, string>(), // fields holding values the page does not send
  failed: null as string | null, // the last request's error, while its result is not on screen
  sent: null as Scenario | null, // the scenario of the result on screen
  sentPreset: null as Preset | null, // the preset it was made from (the link lists the keys that differ from it)
  ladderBase: '', // the scenario (JSON) the ladder rows were computed on
  pins: [] as Pin[], // runs kept as named snapshots (pins.ts)
};

const hooks: Hooks = {
  ready: false, lastRenderMs: null, lastFetchMs: null, lastDrawMs: null, renders: 0, runs: 0, lastPhaseMs: null, phaseCells: 0, phaseReady: false, riskReady: false, stepDownReady: false, ampReady: false,
  ladderReady: false, tippingReady: false, traceReady: false, preset: '', engine: '', error: null,
  bandShown: () => document.getElementById('occupancy-chart')?.dataset.band === 'true' && S.sessions,
  goodputBandShown: () => document.getElementById('chart')?.dataset.band === 'true' && !S.sessions && !!charts.load,
  scenario: () => S.scenario, result: () => S.result, ladder: () => S.ladder, tipping: () => S.tipping,
  exportData: () => exportData(), urlHash: () => location.hash,
  cursorT: () => { const u = charts.load; const l = u?.cursor.left; return u && l !== undefined && l >= 0 ? u.posToVal(l, 'x') : null; },
  traceT: () => chartCtx.traceT,
  notApplied: () => notAppliedReason(), serverDown: false, lastMonteCarloMs: null, mcDone: null, mcSteps: [], linkIgnored: [],
  labels: () => charts.labels, boundY: () => charts.boundY, xRange: () => charts.xRange(), chartsAligned: () => charts.aligned(),
  timeoutLinePx: () => charts.timeoutLinePx(),
  fillsOverSeries: () => (charts.load as unknown as { bands?: unknown[] } | null)?.bands?.length ?? 0,
  exportText: () => $<HTMLTextAreaElement>('envoy-yaml').value, exportFor: () => $('envoy-panel').dataset.for ?? '',
  graphAt: () => (S.result && !isSessions(S.result) && S.result.graph ? graphView.current() : null),
  pins: () => S.pins.map((p) => ({ name: p.name, preset: p.preset, set: p.set, ready: !!p.result })),
  history: () => ({ index: nav.index, top: nav.top }),
};
window.__retrystorm = hooks;

const chartCtx = {
  result: null as RunResult | null,
  data: null as ReturnType<typeof loadData> | null,
  traceT: null as number | null,
  pins: [] as PinLine[],
  drawT0: null as number | null,
  onDrawn: () => {
    hooks.renders++;
    if (chartCtx.drawT0 !== null) {
      hooks.lastDrawMs = performance.now() - chartCtx.drawT0;
      chartCtx.drawT0 = null;
    }
    if (S.pendingT0 !== null) {
      hooks.lastRenderMs = performance.now() - S.pendingT0;
      S.pendingT0 = null;
      document.body.dataset.lastRenderMs = hooks.lastRenderMs.toFixed(1);
    }
  },
};
const charts = new Charts($('chart'), $('backlog-chart'), chartCtx);
const occupancy = new OccupancyChart($('occupancy-chart'), () => chartCtx.onDrawn());
const graphView = new GraphView($('graph'), $<HTMLInputElement>('graph-time'), $('graph-time-label'), $<HTMLTableElement>('graph-table'));
let controls: Controls | null = null;

// ---------- messages ----------
function showError(msg: string | null) {
  const e = $('error');
  hooks.error = msg;
  e.hidden = !msg;
  e.textContent = msg ?? '';
}
const keyLabel = (path: string) => S.schema.find((k) => k.path === path)?.label ?? path;
function notAppliedReason(): string | null {
  const bad = [...S.invalid].map(([p, e]) => `${keyLabel(p)}: ${e}`);
  if (S.failed) bad.push(S.failed);
  return bad.length ? bad.join('; ') : null;
}
/** Greys the results when they are not those of the inputs, and says why. */
function showStale() {
  const why = notAppliedReason();
  const note = $('stale-note');
  const results = $('results');
  if (why) results.dataset.stale = 'true';
  else delete results.dataset.stale;
  note.hidden = !why;
  note.textContent = why ? `Not applied — ${why}. ${S.result ? 'The greyed results are those of the last valid inputs.' : ''}` : '';
  document.body.dataset.stale = String(!!why);
}
function markInvalid(path: string, error: string | null) {
  if (error) S.invalid.set(path, error);
  else S.invalid.delete(path);
  showStale();
}
let toastTimer: ReturnType<typeof setTimeout> | undefined;
function toast(msg: string) {
  const t = $('toast');
  t.textContent = msg;
  t.classList.add('on');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.remove('on'), 2200);
}

// ---------- URL ----------
const types = () => Object.fromEntries(S.schema.map((k) => [k.path, k.type]));
// Undo and redo are the browser's own history of this page: each change the
// user makes becomes an entry once its result is on screen, so Back and
// Forward step through the states too. Keystrokes in one field within a
// second are one step; moving through the history makes no new entry.
const nav = { index: 0, top: 0, step: false, lastPath: '', lastAt: 0 };
/** The next result on screen is a step of its own (path: the field typed in, null: a whole new scenario). */
function newStep(path: string | null = null) {
  const now = performance.now();
  const sameField = path !== null && path === nav.lastPath && now - nav.lastAt < 1000;
  nav.lastPath = path ?? '';
  nav.lastAt = now;
  if (!sameField) nav.step = true;
}
function showHistory() {
  $<HTMLButtonElement>('undo').disabled = nav.index <= 0;
  $<HTMLButtonElement>('redo').disabled = nav.index >= nav.top;
}
const pinStates = (): PinState[] => S.pins.map(({ name, preset, set }) => ({ name, preset, set }));
/** The link holds the inputs of the result on screen (never a value the server refused) and the pins. */
function syncUrl(ranNow = false) {
  const sc = S.sent;
  const preset = S.sentPreset;
  if (!preset || !sc) return;
  const hash = encodeState({ preset: preset.name, set: diffScenario(preset.scenario, sc, S.schema), pins: pinStates() });
  const url = hash || location.pathname + location.search;
  if (ranNow && nav.step && hash !== location.hash) {
    history.pushState({ rs: ++nav.index }, '', url);
    nav.top = nav.index;
  } else if (hash !== location.hash || history.state?.rs !== nav.index) history.replaceState({ rs: nav.index }, '', url);
  if (ranNow) nav.step = false;
  showHistory();
}

/** The preset's description tells of its own incident: once changed, the changes are said instead. */
function describeScenario() {
  if (!S.preset || !S.scenario) return;
  const set = diffScenario(S.preset.scenario, S.scenario, S.schema);
  const label = (path: string) => S.schema.find((k) => k.path === path)?.label ?? path;
  $('preset-desc').textContent = set.length
    ? `${S.preset.name} with ${set.slice(0, 6).map(([p, v]) => `${label(p)} = ${String(v)}`).join(', ')}${set.length > 6 ? ` and ${set.length - 6} more` : ''} (the preset's own description no longer applies).`
    : describeText(S.preset.description, S.schema);
}

// ---------- runs ----------
let ruleMarks = new Set<string>();
// Fields the server's last answer marked: cleared by the next run it accepts
// (a later change can make a marked value run, and the mark would stay).
let serverMarks = new Set<string>();
function clearServerMarks() {
  for (const p of serverMarks) if (!ruleMarks.has(p)) { controls?.mark(p, null); S.invalid.delete(p); }
  serverMarks = new Set();
}
// A busy server (503) asks to be tried again: the same inputs, after its Retry-After.
let busyRetry: ReturnType<typeof setTimeout> | undefined;
async function runNow() {
  if (!S.scenario) return;
  // The inputs as they are now: the controls edit S.scenario in place, and a
  // later edit (even one refused) must not reach this run's requests, link or export.
  const sc = clone(S.scenario);
  // Rules between keys (incident inside the run, whole steps): refuse here, as the server would.
  const rules = checkScenario(sc, S.schema);
  for (const [p, e] of rules) { controls?.mark(p, e); S.invalid.set(p, e); }
  for (const p of ruleMarks) if (!rules.has(p)) { controls?.mark(p, null); S.invalid.delete(p); }
  ruleMarks = new Set(rules.keys());
  if (rules.size) { S.pendingT0 = null; showStale(); return; }
  const seq = ++S.seq;
  clearTimeout(busyRetry);
  const preset = S.preset;
  // What is under way for the result on screen is of other inputs now: the
  // server stops the runs of a caller that has gone, and the cores are free.
  api.stopMonteCarlo();
  api.abort('ladder', 'advice', 'tipping', 'trace');
  const stoppedAsks = cancelAskAgain();
  // Nor is the ladder, advice and tipping point the last result asked for and
  // has not yet sent: it would run beside this run and its band. This run asks again.
  secondary.cancel();
  showProgress(null);
  document.body.dataset.busy = 'true';
  const t0 = S.pendingT0 ?? performance.now();
  // An agent Monte Carlo draws replication 0 at once (a run of its own with the same seed
  // gives the same numbers), then adds the band and the intervals when every run is done.
  const monteCarlo = sc.engine === 'agent' && Number(sc.runs) > 1;
  let drawn = false; // replication 0 is on screen, whatever its band's fate
  try {
    const tf = performance.now();
    // The first batch of the band goes beside the chart's run: the server runs it at a
    // lower priority and leaves replication 0 to the run (docs/http-api.md), so the
    // second core works while the chart's run goes. Its error is met where it is awaited.
    const firstBatch = monteCarlo ? api.montecarlo(sc, 1) : null;
    firstBatch?.catch(() => undefined);
    const r = await api.run(monteCarlo ? { ...clone(sc), runs: 1 } : sc);
    if (seq !== S.seq) return;
    if (monteCarlo) r.scenario.runs = sc.runs;
    hooks.lastFetchMs = performance.now() - tf;
    chartCtx.drawT0 = performance.now();
    hooks.runs++;
    showError(null);
    clearServerMarks();
    S.failed = null;
    hooks.serverDown = false;
    delete document.body.dataset.server;
    S.sent = clone(sc);
    S.sentPreset = preset;
    syncUrl(true);
    S.result = r;
    hooks.engine = isSessions(r) ? 'sessions' : String(r.scenario?.engine ?? 'fluid');
    if (isSessions(r)) renderSessionResult(r);
    else renderResult(r);
    drawn = true;
    if (firstBatch) await monteCarloBatches(sc, r, seq, t0, firstBatch);
  } catch (e) {
    if (isAbort(e)) return;
    if (seq === S.seq) {
      api.stopMonteCarlo(); // the band of inputs that did not run
      showProgress(null);
      S.pendingT0 = null;
      if (!drawn) noteStoppedAsks(stoppedAsks);
      if (e instanceof ApiError && e.busy) {
        // Busy, not refused: the same inputs again once the server says so
        // (a run over the server's deadline is no busy server: not again).
        const wait = busyWaitS(e.retryAfterS);
        showError(`The server is busy (${e.message}); trying again in ${wait} s.`);
        S.failed = 'the server is busy; trying again';
        busyRetry = setTimeout(() => { if (seq === S.seq) void runNow(); }, wait * 1000);
      } else if (e instanceof ApiError) {
        showError(e.message);
        const p = errorPath(e.message, S.schema);
        if (p) {
          controls?.mark(p, e.message.slice(p.length + 2));
          S.invalid.set(p, e.message.slice(p.length + 2));
          serverMarks.add(p);
        } else S.failed = `the server refused these inputs (${e.message})`;
        // A Monte Carlo refused after replication 0 was drawn: the chart is
        // that one run's, and the link and the later views follow it.
        if (monteCarlo && drawn) {
          S.sent = { ...clone(sc), runs: 1 };
          syncUrl(false);
          secondary();
        }
      } else {
        // fetch() rejects with a TypeError when nothing answers at all.
        hooks.serverDown = true;
        document.body.dataset.server = 'down';
        showError(`Server not reachable: nothing answers at ${location.host}. Start \`retrystorm serve\` again, then change any input or reload to try again.`);
        S.failed = 'the server is not reachable';
      }
      showStale();
      if (seq === S.seq) document.body.dataset.busy = 'false';
      return;
    }
  } finally {
    if (seq === S.seq) document.body.dataset.busy = 'false';
  }
  secondary();
}

/** "k of N runs" above the chart while a Monte Carlo arrives (null: none under way). */
function showProgress(done: number | null, total = 0, stopped = false) {
  const p = $('mc-progress');
  p.hidden = done === null;
  hooks.mcDone = done;
  if (done === null) return;
  hooks.mcSteps.push(done);
  const bar = $<HTMLProgressElement>('mc-bar');
  bar.max = total;
  bar.value = done;
  bar.hidden = stopped;
  $('mc-stop').hidden = stopped;
  $('mc-text').textContent = stopped
    ? `Stopped after ${done} of ${total} runs: the band and the intervals are of those ${done}.`
    : `Monte Carlo: ${done} of ${total} runs; the band and the intervals grow as runs arrive.`;
  p.dataset.state = stopped ? 'stopped' : done < total ? 'running' : 'done';
}

/**
 * An agent Monte Carlo batch by batch (POST /api/montecarlo, one run per server core):
 * the band and the intervals are redrawn as each batch arrives. A newer change, or
 * Stop, aborts the batch under way, and the server stops its runs.
 */
async function monteCarloBatches(sc: Scenario, r: RunResult, seq: number, t0: number, first: Promise<MonteCarloBatch>) {
  const total = Number(sc.runs);
  let done = 1; // replication 0 is on screen
  showProgress(done, total);
  try {
    let next = first;
    while (done < total) {
      const b = await next;
      if (seq !== S.seq || S.result !== r) return;
      done = b.done;
      // The server runs the next batch while this one is drawn.
      if (done < total) next = api.montecarlo(sc, done);
      r.montecarlo = b.montecarlo;
      chartCtx.data = loadData(r);
      charts.render(true); // the band and the intervals: the backlog is replication 0's
      renderVerdict(r);
      showProgress(done, total);
    }
    hooks.lastMonteCarloMs = performance.now() - t0;
    showProgress(null);
  } catch (e) {
    if (!isAbort(e) || seq !== S.seq) throw e;
    showProgress(done, total, true); // Stop: what arrived stays, said to be partial
  }
}

/** Shows the session model's view or the fluid/agent one (panels, exports). */
function setMode(sessions: boolean) {
  if (S.sessions === sessions && document.body.dataset.engineView) return;
  S.sessions = sessions;
  document.body.dataset.engineView = sessions ? 'sessions' : 'requests';
  for (const e of document.querySelectorAll<HTMLElement>('.sessions-only')) e.hidden = !sessions;
  for (const e of document.querySelectorAll<HTMLElement>('.fluid-only')) e.hidden = sessions;
  const envoy = $<HTMLButtonElement>('export-envoy');
  envoy.disabled = sessions;
  envoy.title = sessions ? 'The session model has no request retry policy to export' : '';
  if (sessions) $('envoy-panel').hidden = true;
  // Imported configurations set a request retry policy: nothing the session model reads.
  const imp = $<HTMLButtonElement>('import-open');
  imp.disabled = sessions;
  imp.title = sessions ? 'Imported configurations describe request retries; the session model has none to set' : '';
  if (sessions) $('import-panel').hidden = true;
}

// "Try it" keeps what is under the pointer where it is: the advice list
// holds its height until the user's next change of their own, so the list
// growing shorter with the new run does not pull the ladder up the screen.
// Text above it changing length (the verdict, the bound) is made up for by
// scrolling, so the list's top stays at the same place on the screen.
let adviceTop: number | null = null;
// The panel is pinned, not the list: the list's last margin collapses
// through it only while its height is its content's.
const advicePanel = () => $('advice').closest('section') as HTMLElement;
function pinAdvice() {
  const panel = advicePanel();
  panel.style.minHeight = `${panel.getBoundingClientRect().height}px`;
  adviceTop = $('advice').getBoundingClientRect().top;
}
function unpinAdvice() {
  advicePanel().style.minHeight = '';
  adviceTop = null;
}
/** The tipping point's card, above the advice: its new height is made up for. */
function showTipping(t: Parameters<typeof renderTipping>[0]) {
  renderTipping(t);
  keepAdviceInPlace();
}
function keepAdviceInPlace() {
  if (adviceTop === null) return;
  const moved = $('advice').getBoundingClientRect().top - adviceTop;
  if (Math.abs(moved) >= 0.5) window.scrollBy(0, moved);
}
const applyChange = (change: Record<string, unknown>) => {
  pinAdvice();
  newStep();
  const next = clone(S.scenario!);
  for (const [p, v] of Object.entries(change)) setPath(next as Record<string, unknown>, p, v);
  loadScenario(next);
  toast('Applied the suggested change');
};

function renderSessionResult(r: SessionResult) {
  setMode(true);
  showStale();
  chartCtx.result = null;
  chartCtx.data = null;
  renderSessionVerdict(r);
  occupancy.render(r);
  renderAdvice(r, applyChange, 'Nothing to change: no advice for this run.');
  // The hour table sits below the chart: build it after the chart is drawn.
  setTimeout(() => { if (S.result === r) renderHours(r); }, 0);
}

/** A graph run shows the graph view; its chart is of the incident's service (docs/graph.md). */
function showGraph(r: RunResult) {
  const graph = r.graph !== undefined;
  for (const e of document.querySelectorAll<HTMLElement>('.graph-only')) e.hidden = !graph;
  for (const e of document.querySelectorAll<HTMLElement>('.single-only')) e.hidden = graph;
  document.body.dataset.graph = String(graph);
  const service = r.graph?.incident_service;
  $('chart-title').textContent = graph && service ? `Load at ${service}, the incident's service` : 'Load at the dependency';
  const imp = $<HTMLButtonElement>('import-open');
  imp.disabled = graph;
  imp.title = graph ? 'Imported configurations set one client policy; a graph has one per call (retrystorm import --mesh DIR reads a whole mesh)' : '';
  if (graph) $('import-panel').hidden = true;
  const pick = $<HTMLSelectElement>('export-call');
  pick.hidden = !graph;
  if (graph) {
    const keep = pick.value;
    pick.replaceChildren(...r.graph!.edges.map((e, i) => Object.assign(document.createElement('option'), { value: String(i), textContent: `calls[${i}] ${e.from} → ${e.to}` })));
    if (keep && Number(keep) < r.graph!.edges.length) pick.value = keep;
    graphView.show(r);
  }
}

function renderResult(r: RunResult) {
  setMode(false);
  showStale();
  showGraph(r);
  chartCtx.result = r;
  chartCtx.data = loadData(r);
  chartCtx.pins = pinLines();
  chartCtx.traceT = null;
  charts.render();
  renderPins();
  renderVerdict(r);
  renderStack(r.scenario ?? S.scenario!, r);
  if (r.advice?.length) renderAdvice(r, applyChange);
  else showAdviceNote('Working out what to change…');
  renderGoodputTable(r);
  // A new run starts with the trace folded (it can hold one line per step);
  // its text arrives separately (loadTrace), one entry per step.
  S.trace = { total: r.trace?.length ?? r.series.t_s.length, visible: 0 };
  traceLoadedAgain();
  showTrace(false);
  renderSummary(r);
  if (!$('envoy-panel').hidden) void refreshExport();
  if (S.ladder.length) drawLadder();
  markPhaseCurrent();
  keepAdviceInPlace();
}

const runSoon = debounce(() => void runNow(), 60, { leading: true });

// Ladder and tipping point: slower, after the chart.
let ladderAsked = 0;
// Advice and ladder asked again after a busy answer: a newer run cancels them
// (and a newer secondary(), which asks for all it needs itself).
const askAgainTimers = new Map<ReturnType<typeof setTimeout>, AskedView>();
function askAgainLater(view: AskedView, seconds: number, ask: () => void) {
  const seq = S.seq;
  const t = setTimeout(() => { askAgainTimers.delete(t); if (seq === S.seq) ask(); }, seconds * 1000);
  askAgainTimers.set(t, view);
}
/** Cancels the asking again; returns the views that were waiting for it. */
function cancelAskAgain(): Set<AskedView> {
  const views = new Set(askAgainTimers.values());
  for (const t of askAgainTimers.keys()) clearTimeout(t);
  askAgainTimers.clear();
  return views;
}
/** A newer run cancelled the asking again and then failed: the result on
 * screen keeps its notes, which must not promise an answer still coming. */
function noteStoppedAsks(views: Set<AskedView>) {
  if (views.has('advice')) showAdviceNote(askingStoppedText('advice'));
  if (views.has('ladder')) {
    const note = $('ladder-error');
    note.hidden = false;
    note.textContent = askingStoppedText('ladder');
  }
}
/** The ladder's rows for `base` (its JSON: baseKey); `tries`: asks again made after busy answers. */
function askLadder(base: Scenario, baseKey: string, tries = 0) {
  S.ladderBase = baseKey;
  const asked = ++ladderAsked;
  api.ladder(base).then((l) => { S.ladder = l.rows; showLadderError(null); drawLadder(); keepAdviceInPlace(); hooks.ladderReady = true; }).catch((e) => {
    if (isAbort(e)) {
      if (asked === ladderAsked) S.ladderBase = ''; // stopped by a change: the next result asks again
      return;
    }
    S.ladder = [];
    S.ladderBase = '';
    const wait = askAgainIn(e, tries);
    showLadderError(e, wait);
    drawLadder();
    if (wait === null) hooks.ladderReady = true;
    else askAgainLater('ladder', wait, () => askLadder(base, baseKey, tries + 1));
  });
}
const secondary = debounce(() => {
  // For the result on screen: the inputs may since hold a value that is not applied.
  const sc = S.sent;
  if (!sc) return;
  cancelAskAgain();
  if (sc.engine === 'sessions') {
    // No trace, ladder, tipping point or phase map for the session model.
    hooks.ladderReady = hooks.tippingReady = hooks.traceReady = true;
    return;
  }
  void loadTrace();
  // The ladder runs on the preset's policy with the user's other inputs: its
  // rows keep meaning what their labels say after a row is loaded.
  const base = ladderBaseOf(sc);
  const baseKey = JSON.stringify(base);
  if (baseKey !== S.ladderBase || !S.ladder.length) askLadder(base, baseKey);
  else { drawLadder(); hooks.ladderReady = true; }
  const inRun = S.result && !isSessions(S.result) ? S.result.tipping : undefined;
  if (inRun && typeof inRun === 'object' && 'grid_s' in inRun && S.result?.scenario && diffScenario(S.result.scenario, sc, S.schema, false).length === 0) {
    S.tipping = inRun;
    showTipping(inRun);
    hooks.tippingReady = true;
    return;
  }
  showTipping(null);
  const tippingAlone = () => api.tipping(sc).then((t) => { S.tipping = t; showTipping(t); hooks.tippingReady = true; }).catch((e) => {
    if (isAbort(e)) return;
    showTipping(null);
    $('m-tipping').querySelector('.v')!.textContent = '–';
    $('m-tipping').querySelector('.s')!.textContent = `not computed: ${refusal(e)}`;
    hooks.tippingReady = true;
  });
  // Advice (and the tipping point it uses) come after the chart: /api/run is asked without them.
  const r = S.result;
  const askAdvice = (tries: number) => api.advice(sc).then((a) => {
    if (S.result !== r || !r || isSessions(r)) return;
    r.advice = a.advice;
    renderAdvice(r, applyChange);
    keepAdviceInPlace();
    if (a.tipping) { S.tipping = a.tipping; showTipping(a.tipping); hooks.tippingReady = true; } else void tippingAlone();
  }).catch((e) => {
    if (isAbort(e) || S.result !== r) return;
    // The placeholder says the advice is coming: say what happened instead.
    const wait = askAgainIn(e, tries);
    showAdviceNote(adviceErrorText(e, wait));
    keepAdviceInPlace();
    if (wait !== null) askAgainLater('advice', wait, () => void askAdvice(tries + 1)); // its answer holds the tipping point too
    else void tippingAlone();
  });
  void askAdvice(0);
}, 250);

/** A line in place of the advice list (working on it, or why there is none). */
function showAdviceNote(text: string) {
  $('advice').replaceChildren(Object.assign(document.createElement('li'), { textContent: text }));
}

/** The ladder's rows are gone: say why (null: they came); wait: seconds before it is asked again. */
function showLadderError(e: unknown, wait: number | null = null) {
  const note = $('ladder-error');
  note.hidden = e === null;
  note.textContent = e === null ? '' : ladderErrorText(e, wait);
}

/** A change made by the user at time t0. */
function changed(t0: number, keepLadder = false) {
  S.pendingT0 = t0;
  S.keepLadder = keepLadder;
  hooks.ladderReady = keepLadder && S.ladder.length > 0;
  hooks.tippingReady = false;
  hooks.traceReady = false;
  // The link changes once the result is on screen (runNow): here it would
  // write the old result over the history entry being shown.
  describeScenario();
  markPhaseStaleIfChanged();
  runSoon();
}

function onControl(path: string, value: unknown, ev: Event) {
  if (!S.scenario) return;
  unpinAdvice();
  newStep(path);
  const t0 = ev.timeStamp > 0 && ev.timeStamp <= performance.now() ? ev.timeStamp : performance.now();
  setPath(S.scenario as Record<string, unknown>, path, value);
  // Keys shown only for some values of this one (engine, budget kind) appear or go.
  if (S.schema.some((k) => k.when?.path === path)) {
    controls?.set(S.scenario, true);
    fillPhaseKeys(S.scenario); // the phase map offers only the keys that now matter
  }
  if (path === 'step_s') controls?.set(S.scenario, true);
  if (path === 'recovery.criterion') markPhaseStale();
  if (path === 'items.notification_at_s') notificationHint();
  changed(t0);
}

function loadScenario(sc: Scenario, t0 = performance.now(), keepLadder = false) {
  S.scenario = clone(sc);
  S.invalid.clear();
  ruleMarks.clear();
  controls?.set(S.scenario);
  notificationHint();
  renderStack(S.scenario, null);
  changed(t0, keepLadder);
}

function selectPreset(name: string, set: [string, unknown][] = []) {
  const p = S.presets.find((x) => x.name === name) ?? S.presets[0];
  if (!p) return;
  S.preset = p;
  hooks.preset = p.name;
  unpinAdvice();
  $<HTMLSelectElement>('preset-select').value = p.name;
  $('preset-desc').textContent = describeText(p.description, S.schema);
  S.ladder = [];
  S.ladderBase = '';
  drawLadder();
  resetPhaseAxes(p.scenario);
  charts.resetZoom(); // zoom is kept across changes of one scenario, not across presets
  loadScenario(applySet(p.scenario, set as [string, string | number | boolean][]));
}

// ---------- pins ----------
/** Each pin's on-time responses and backlog on the time line of the run on screen. */
function pinLines(): PinLine[] {
  const d = chartCtx.data;
  if (!d) return [];
  return S.pins.filter((p) => p.result).map((p) => {
    const pd = loadData(p.result!);
    return { name: p.name, goodput: onTimeLine(d.t, pd.t, pd.goodput), backlog: onTimeLine(d.t, pd.t, pd.backlog) };
  });
}
/** Redraws the pins: their lines over the charts and the table that compares them. */
function showPins() {
  chartCtx.pins = pinLines();
  charts.render();
  renderPins();
  syncUrl();
}
function renderPins() {
  const panel = $('pins-panel');
  panel.hidden = S.sessions || !S.pins.length;
  const add = $<HTMLButtonElement>('pin-add');
  add.disabled = !S.result || isSessions(S.result);
  add.textContent = S.pins.length >= MAX_PINS ? `Pin this run (${MAX_PINS} pinned)` : 'Pin this run';
  if (panel.hidden) return;
  const table = $<HTMLTableElement>('pins-table');
  // The table is built anew: the control the user acted on keeps the focus.
  const focused = table.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.testid : undefined;
  const cell = (tag: 'th' | 'td', text: string) => Object.assign(document.createElement(tag), { textContent: text });
  const head = document.createElement('tr');
  head.append(cell('th', ''), Object.assign(cell('th', 'On screen'), { scope: 'col' }));
  S.pins.forEach((p, i) => {
    const th = document.createElement('th');
    th.scope = 'col';
    const swatch = Object.assign(document.createElement('span'), { className: 'pin-swatch' });
    swatch.style.borderTopColor = `var(--c-pin${i + 1})`;
    swatch.style.borderTopStyle = PIN_DASH[i].length > 2 ? 'dotted' : 'dashed';
    const name = Object.assign(document.createElement('input'), { className: 'pin-name', value: p.name, type: 'text' });
    name.dataset.testid = `pin-name-${i}`;
    name.dataset.i = String(i);
    name.setAttribute('aria-label', `Name of pin ${i + 1}`);
    const load = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Load', title: 'Make these inputs the ones on screen (Undo goes back)' });
    load.dataset.testid = `pin-load-${i}`;
    load.dataset.i = String(i);
    load.dataset.act = 'load';
    const remove = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Remove' });
    remove.dataset.testid = `pin-remove-${i}`;
    remove.dataset.i = String(i);
    remove.dataset.act = 'remove';
    remove.setAttribute('aria-label', `Remove pin ${p.name}`);
    th.append(swatch, name, ' ', load, ' ', remove);
    head.append(th);
  });
  table.tHead!.replaceChildren(head);
  const current = S.result && !isSessions(S.result) ? S.result : null;
  table.tBodies[0].replaceChildren(...pinRows(current, S.pins).map(([label, ...values]) => {
    const tr = document.createElement('tr');
    tr.append(Object.assign(cell('th', label), { scope: 'row' }), ...values.map((v) => cell('td', v)));
    return tr;
  }));
  if (focused) table.querySelector<HTMLElement>(`[data-testid="${focused}"]`)?.focus();
}
function addPin() {
  const r = S.result;
  if (!r || isSessions(r) || !S.sentPreset || !S.sent) return;
  if (S.pins.length >= MAX_PINS) { toast(`${MAX_PINS} pins at most: remove one first`); return; }
  const set = diffScenario(S.sentPreset.scenario, S.sent, S.schema);
  const name = pinName(S.sentPreset.name, set, S.schema, S.pins.map((p) => p.name));
  S.pins.push({ name, preset: S.sentPreset.name, set, result: r });
  showPins();
  toast(`Pinned: ${name}`);
}
function wirePins() {
  const table = $('pins-table');
  table.addEventListener('click', (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>('button[data-act]');
    if (!b) return;
    const i = Number(b.dataset.i);
    const pin = S.pins[i];
    if (!pin) return;
    if (b.dataset.act === 'remove') {
      S.pins.splice(i, 1);
      showPins();
      const next = S.pins.length ? table.querySelector<HTMLElement>(`[data-testid="pin-remove-${Math.min(i, S.pins.length - 1)}"]`) : null;
      (next ?? $('pin-add')).focus(); // the focus stays near where the user acted
      toast(`Removed: ${pin.name}`);
      return;
    }
    newStep();
    if (pin.preset !== S.preset?.name) selectPreset(pin.preset, pin.set);
    else loadScenario(applySet(S.preset.scenario, pin.set));
    toast(`Loaded: ${pin.name}`);
  });
  table.addEventListener('change', (e) => {
    const input = (e.target as HTMLElement).closest<HTMLInputElement>('input.pin-name');
    const pin = input && S.pins[Number(input.dataset.i)];
    if (!input || !pin) return;
    const name = input.value.trim();
    if (!name || S.pins.some((p) => p !== pin && p.name === name)) { input.value = pin.name; toast('A pin needs a name of its own'); return; }
    pin.name = name;
    showPins();
  });
}
/** The pins of the link (a reload, a shared link): their inputs now, their runs made again. */
function pinsFromLink() {
  if (!location.hash) return;
  const st = decodeState(location.hash, types());
  for (const p of (st.pins ?? []).slice(0, MAX_PINS)) {
    const preset = S.presets.find((x) => x.name === p.preset);
    if (!preset) { hooks.linkIgnored.push({ path: 'pin', value: p.name, why: `no such preset: ${p.preset}` }); continue; }
    const { kept, ignored } = filterSet(p.set, S.schema, preset.scenario);
    hooks.linkIgnored.push(...ignored);
    const pin: Pin = { name: p.name, preset: p.preset, set: kept, result: null };
    S.pins.push(pin);
    api.pinRun(applySet(preset.scenario, kept), pin.name).then((r) => {
      if (!S.pins.includes(pin)) return;
      pin.result = r;
      showPins();
    }).catch((e) => {
      // A pin the user removed meanwhile is gone already: nothing to take out or report.
      if (isAbort(e) || !removePin(S.pins, pin)) return;
      showPins();
      showError(`Pin ${pin.name}: ${e instanceof Error ? e.message : String(e)}`);
    });
  }
  if (hooks.linkIgnored.length) showLinkNote([...hooks.linkIgnored]);
}

// ---------- ladder ----------
/** The keys the ladder's rows set (they are the policy it compares). */
function ladderKeys(): Set<string> {
  const keys = new Set<string>();
  for (const r of S.ladder) for (const k of Object.keys(r.set ?? {})) keys.add(k);
  return keys;
}
/** The scenario with the ladder's keys back at the preset's values: the
 * rows stay a fixed comparison whatever row was loaded. */
function ladderBaseOf(sc: Scenario): Scenario {
  const base = clone(sc);
  if (!S.preset) return base;
  for (const k of ladderKeys()) setPath(base as Record<string, unknown>, k, getPath(S.preset.scenario, k));
  (base as Record<string, unknown>).ladder = clone(S.preset.scenario.ladder);
  return base;
}
function ladderCurrentIndex(): number {
  if (!S.scenario) return -1;
  return S.ladder.findIndex((r) => r.scenario && diffScenario(r.scenario, S.scenario!, S.schema, false).length === 0);
}
/** The user's inputs the ladder sets back to the preset's (a row of it
 * changes them), by label: the rows do not run with those. */
function ladderReplaced(sc: Scenario): string[] {
  if (!S.preset) return [];
  const preset = S.preset.scenario;
  return [...ladderKeys()]
    .filter((k) => JSON.stringify(getPath(sc, k)) !== JSON.stringify(getPath(preset, k)))
    .map((k) => S.schema.find((s) => s.path === k)?.label ?? k);
}
function drawLadder() {
  const sc = S.scenario;
  if (!sc) return;
  const mode = (sc.ladder as { mode?: string } | undefined)?.mode ?? 'cumulative';
  renderLadder(S.ladder, sc, mode, ladderCurrentIndex(), ladderReplaced(sc), (i) => {
    const row = S.ladder[i];
    let next: Scenario;
    if (row.scenario) next = clone(row.scenario);
    else {
      next = clone(S.scenario!);
      for (const [p, v] of Object.entries(row.set ?? {})) setPath(next as Record<string, unknown>, p, v);
    }
    // Keep the preset's ladder so the table stays the same.
    (next as Record<string, unknown>).ladder = clone(S.scenario!.ladder);
    newStep();
    loadScenario(next, performance.now(), true);
    toast(`Loaded: ${row.name}`);
    // Show what was loaded: the chart, scrolled into view (the table keeps its rows' heights).
    document.querySelector('.chart-panel.fluid-only')?.scrollIntoView({ block: 'start', behavior: 'instant' as ScrollBehavior });
  });
}

// ---------- trace ----------
/** Fetches the trace of the shown run once; later calls share the answer.
 * After a failure the next call (a trace control used) asks again. */
let tracePending: Promise<void> | null = null;
let traceFailed: string | null = null; // why the last ask for the trace of the run on screen failed
let traceNoteWas: { text: string; kind?: string } | null = null; // the note before it said the trace is not loaded
function loadTrace(): Promise<void> {
  const r = S.result;
  const sc = S.sent;
  if (!r || !sc || r.trace) return Promise.resolve();
  if (tracePending) return tracePending;
  tracePending = api.trace(sc).then((steps) => {
    if (S.result === r) {
      r.trace = steps;
      hooks.traceReady = true;
      traceLoadedAgain();
      if (S.trace.visible > 0) showTrace();
    }
  }).catch((e) => {
    if (isAbort(e) || S.result !== r) return;
    traceFailed = refusal(e);
    showError(`The trace did not load: ${traceFailed}`);
    traceNotLoaded();
    hooks.traceReady = true; // settled: the controls say it is not there
  }).finally(() => { tracePending = null; });
  return tracePending;
}
/** A trace came (or a new run is on screen): the note no longer says it failed. */
function traceLoadedAgain() {
  traceFailed = null;
  if (!traceNoteWas) return;
  const note = $('trace-event-note');
  note.textContent = traceNoteWas.text;
  if (traceNoteWas.kind !== undefined) note.dataset.kind = traceNoteWas.kind;
  traceNoteWas = null;
}
/** The trace of the run on screen, or null while it has not arrived. */
const loadedTrace = () => (S.result && !isSessions(S.result) ? S.result.trace ?? null : null);
/** The trace controls say the trace is not there, and that using them asks again. */
function traceNotLoaded() {
  const note = $('trace-event-note');
  traceNoteWas ??= { text: note.textContent ?? '', kind: note.dataset.kind };
  note.textContent = `The trace is not loaded${traceFailed ? ` (${traceFailed})` : ''}. Start trace, Next step or Show all ask for it again.`;
  delete note.dataset.kind;
}

function showTrace(moveCursor = true) {
  const steps = loadedTrace() ?? [];
  // A trace that has not arrived (or is shorter than the run) has no steps to draw.
  S.trace = traceDrawable(S.trace, loadedTrace()?.length ?? null);
  renderTrace(steps, S.trace.visible, moveCursor, Number(S.result?.scenario?.step_s) || 1, S.trace.total);
  const i = traceCurrent(S.trace);
  if (moveCursor) charts.cursorTo(i >= 0 && i < steps.length ? steps[i].t_s : null);
  document.body.dataset.traceVisible = String(S.trace.visible);
}

/** Moves the trace to the next moment of the story after the current step. */
function traceToNextEvent() {
  const r = S.result;
  if (!r || isSessions(r) || !r.trace) return;
  const cur = S.trace.visible > 0 ? r.trace[S.trace.visible - 1]?.t_s ?? null : null;
  const m = nextMoment(moments(r), cur);
  const note = $('trace-event-note');
  if (!m) { note.textContent = 'No later event: this is the last moment the story turns on.'; return; }
  let i = r.trace.findIndex((st) => st.t_s >= m.t - 1e-9);
  if (i < 0) i = r.trace.length - 1;
  S.trace = traceSeek(S.trace, i + 1);
  note.textContent = `${fmtTime(m.t)} s: ${m.text}`;
  note.dataset.kind = m.kind;
  showTrace();
}

/** The chart's story as a table (screen readers, keyboards, a phone). */
function renderSummary(r: RunResult) {
  const rows = moments(r).map((m, k) => {
    const tr = document.createElement('tr');
    const a = document.createElement('td');
    a.textContent = `${fmtTime(m.t)} s`;
    const b = document.createElement('td');
    b.textContent = `${k + 1}. ${m.text}`; // a phone's chart labels its lines by these numbers
    tr.append(a, b);
    return tr;
  });
  const peak = document.createElement('tr');
  peak.innerHTML = '<td></td><td></td>';
  peak.cells[0].textContent = r.metrics.peak_step_t_s !== undefined ? `${fmtTime(r.metrics.peak_step_t_s)} s` : '–';
  peak.cells[1].textContent = `Peak: clients send ${fmtAmp(r.metrics.peak_amplification)} the normal load; ${fmtPct(r.metrics.failed_fraction)} of requests fail over the run. One timeout of work is ${fmtNum(timeoutWork(r), 0)} queued.`;
  rows.push(peak);
  $('chart-summary').querySelector('tbody')!.replaceChildren(...rows);
}

// ---------- phase map ----------
const numericKeys = () => S.schema.filter((k) => (k.type === 'number' || k.type === 'integer') && !isHidden(k.path));
const keyOf = (path: string) => S.schema.find((k) => k.path === path);
const phaseMap = new PhaseMap($<HTMLCanvasElement>('phase-map'), $('phase-tip'), $('phase-legend'), (values) => {
  if (!S.scenario) return;
  const next = clone(S.scenario);
  for (const [p, v] of Object.entries(values)) setPath(next as Record<string, unknown>, p, v);
  newStep();
  loadScenario(next);
  toast('Loaded the phase-map cell');
});

function fillAxisInputs(which: 'x' | 'y', sc: Scenario) {
  const k = keyOf($<HTMLSelectElement>(`phase-${which}`).value);
  if (!k) return;
  const a = defaultAxis(k, sc);
  $<HTMLInputElement>(`phase-${which}-from`).value = String(a.from);
  $<HTMLInputElement>(`phase-${which}-to`).value = String(a.to);
}
// The run's frame (its length, step, seed, replications, tipping grid) is
// not a result to map: changing it changes what is measured, not the system.
const FRAME_KEYS = new Set(['horizon_s', 'step_s', 'seed', 'runs', 'tipping.grid_s']);
/** The keys a phase map may sweep: numeric, read by this scenario's engine and budget. */
/** Read by the risk view only: a run's verdict, which the phase map colours, refuses it. */
const RISK_ONLY_KEYS = new Set(['incident.random_per_h']);
/** Closed-loop clients (demand.clients) send when their last request ended: no rate is read. */
const readsRate = (sc: Scenario) => !(Number(getPath(sc, 'demand.clients')) > 0);
function phaseKeys(sc: Scenario) {
  return numericKeys().filter((k) => !FRAME_KEYS.has(k.path) && !RISK_ONLY_KEYS.has(k.path) && isRelevant(k, sc, S.schema) && (k.path !== 'demand.rate_per_s' || readsRate(sc)));
}
/** Each axis's key as the user chose it: a scenario that does not offer it leaves it to the next that does. */
const phaseChoice = { x: 'incident.duration_s', y: 'demand.rate_per_s' };
/** The load of closed-loop clients is their number. */
const phaseFallback = { x: '', y: 'demand.clients' };
/** Offers the phase keys of `sc`, each axis on the user's key where it is offered. */
function fillPhaseKeys(sc: Scenario) {
  fillRiskKnobs(sc);
  const keys = phaseKeys(sc);
  const offered = (path: string) => keys.some((k) => k.path === path);
  for (const w of ['x', 'y'] as const) {
    const s = $<HTMLSelectElement>(`phase-${w}`);
    const was = s.value;
    s.replaceChildren(...keys.map((k) => { const o = document.createElement('option'); o.value = k.path; o.textContent = k.label ?? k.path; return o; }));
    s.value = offered(phaseChoice[w]) ? phaseChoice[w] : offered(phaseFallback[w]) ? phaseFallback[w] : keys[w === 'x' ? 0 : 1]?.path ?? '';
    if (s.value !== was) fillAxisInputs(w, sc);
  }
}
function resetPhaseAxes(sc: Scenario) {
  fillPhaseKeys(sc);
  fillAxisInputs('x', sc);
  fillAxisInputs('y', sc);
  markPhaseStale();
}
function markPhaseStale() {
  if (phaseMap.view) $('phase-status').textContent = 'The scenario changed: draw the map again to update it.';
}
/** The scenario a phase map was swept from, its two axes aside: a change of
 * anything else leaves the map's cells those of another scenario. */
let phaseSwept = '';
function phaseKey(sc: Scenario, xPath: string, yPath: string): string {
  const rest = clone(sc) as Record<string, unknown>;
  setPath(rest, xPath, null);
  setPath(rest, yPath, null);
  return JSON.stringify(rest);
}
function markPhaseStaleIfChanged() {
  const v = phaseMap.view;
  if (v && S.scenario && phaseKey(S.scenario, v.xPath, v.yPath) !== phaseSwept) markPhaseStale();
}
function markPhaseCurrent() {
  const v = phaseMap.view;
  if (!v || !S.scenario) return;
  v.current = { x: Number(getPath(S.scenario, v.xPath)), y: Number(getPath(S.scenario, v.yPath)) };
  phaseMap.draw();
}

async function drawPhase() {
  const sc = S.sent;
  if (!sc) return;
  const t0 = performance.now();
  hooks.phaseReady = false;
  const xk = keyOf($<HTMLSelectElement>('phase-x').value);
  const yk = keyOf($<HTMLSelectElement>('phase-y').value);
  if (!xk || !yk || xk.path === yk.path) {
    $('phase-status').textContent = 'Pick two different keys.';
    return;
  }
  const num = (id: string) => Number($<HTMLInputElement>(id).value);
  const notes: string[] = [];
  const range = (w: 'x' | 'y', k: SchemaKey) => {
    let a = num(`phase-${w}-from`);
    let b = num(`phase-${w}-to`);
    if (!Number.isFinite(a) || !Number.isFinite(b) || a === b) return null;
    if (a > b) {
      [a, b] = [b, a];
      $<HTMLInputElement>(`phase-${w}-from`).value = String(a);
      $<HTMLInputElement>(`phase-${w}-to`).value = String(b);
      notes.push(`${label(k)}: the range was reversed, so from and to were swapped`);
    }
    return axisFromRange(k, a, b, PHASE_CELLS, gridStep(k, sc));
  };
  const ax = range('x', xk);
  const ay = range('y', yk);
  if (!ax || !ay) {
    $('phase-status').textContent = `Give each axis two different numbers (${!ax ? label(xk) : label(yk)}).`;
    return;
  }
  $('phase-status').textContent = `Running ${PHASE_CELLS}×${PHASE_CELLS} scenarios…${notes.length ? ` (${notes.join('; ')})` : ''}`;
  $('phase-draw').setAttribute('aria-busy', 'true');
  try {
    const res = await api.sweep(sc, [ax, ay]);
    const grid = gridOf(res.rows, xk.path, yk.path);
    const view = makeView(grid, xk.path, yk.path, label(xk), label(yk), sc);
    phaseSwept = phaseKey(sc, xk.path, yk.path);
    phaseMap.show(view);
    markPhaseCurrent();
    hooks.lastPhaseMs = performance.now() - t0;
    hooks.phaseCells = grid.xs.length * grid.ys.length;
    hooks.phaseReady = true;
    document.body.dataset.phaseMs = hooks.lastPhaseMs.toFixed(0);
    $('phase-status').textContent = `${notes.length ? `${notes.join('; ')}. ` : ''}${grid.xs.length}×${grid.ys.length} runs in ${hooks.lastPhaseMs.toFixed(0)} ms, coloured by ${criterionOf(sc) === 'goodput' ? 'goodput' : 'failure'} recovery time.`;
    // Inputs changed while the sweep ran: its cells are of the scenario it was sent.
    markPhaseStaleIfChanged();
  } catch (e) {
    if (!isAbort(e)) $('phase-status').textContent = `Phase map failed: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    $('phase-draw').removeAttribute('aria-busy');
  }
}
const label = (k: SchemaKey) => `${k.label ?? k.path}${k.unit ? ` (${k.unit})` : ''}`;

// ---------- the panels behind a button: risk, step-down, amplification ----------
/** Runs a panel's work with its button busy; the status line gets the
 * work's answer, or what failed (an aborted request says nothing). */
async function runPanel(name: string, busy: string, what: string, work: (t0: number) => Promise<string>) {
  const t0 = performance.now();
  $(`${name}-status`).textContent = busy;
  $(`${name}-draw`).setAttribute('aria-busy', 'true');
  try {
    $(`${name}-status`).textContent = await work(t0);
  } catch (e) {
    if (!isAbort(e)) $(`${name}-status`).textContent = `${what} failed: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    $(`${name}-draw`).removeAttribute('aria-busy');
  }
}
const since = (t0: number) => `${(performance.now() - t0).toFixed(0)} ms`;

function drawRiskTable(t: ReturnType<typeof riskTable>) {
  const th = (text: string) => Object.assign(document.createElement('th'), { scope: 'col', textContent: text });
  const headRow = document.createElement('tr');
  headRow.append(...t.head.map(th));
  $('risk-table').querySelector('thead')!.replaceChildren(headRow);
  const rows = t.rows.map((r) => {
    const tr = document.createElement('tr');
    tr.append(Object.assign(document.createElement('th'), { scope: 'row', textContent: r.label }));
    for (const c of r.cells) {
      const td = Object.assign(document.createElement('td'), { textContent: c.here ? `● ${c.text}` : c.text, title: c.title });
      td.style.background = `color-mix(in srgb, var(--bad, #c0392b) ${Math.round(c.tone * 60)}%, transparent)`;
      tr.append(td);
    }
    return tr;
  });
  $('risk-table').querySelector('tbody')!.replaceChildren(...rows);
}

// The metastable region: the knobs this scenario reads, and the map last drawn.
let riskMap: RiskMap | null = null;
function fillRiskKnobs(sc: Scenario) {
  const pick = $<HTMLSelectElement>('risk-knob');
  const was = pick.value;
  const knobs = RISK_KNOBS.filter((k) => k.applies(sc));
  pick.replaceChildren(...knobs.map((k) => Object.assign(document.createElement('option'), { value: k.path, textContent: k.label })));
  pick.value = knobs.some((k) => k.path === was) ? was : knobs[0].path;
}
const riskColour = () => $<HTMLSelectElement>('risk-colour').value as RiskColour;
async function drawRisk() {
  const sent = riskBase(S.sent, S.scenario);
  if (!sent) return;
  hooks.riskReady = false;
  const risk = riskScenario(sent);
  const { scenario } = risk;
  const rate = Number(getPath(sent, 'incident.random_per_h'));
  const note = `${risk.note}${randomIncidents(sent) ? `Incidents at random, ${fmtNum(rate, rate < 1 ? 2 : 1)} an hour, besides the load's own chance. ` : ''}`;
  fillRiskKnobs(scenario);
  const knob = riskKnob($<HTMLSelectElement>('risk-knob').value);
  const vary = riskVary(knob, scenario);
  await runPanel('risk', `${note}Running ${RISK_RUNS} runs at each of ${RISK_LOADS.length} loads and each value of ${knob.label.toLowerCase()}…`, 'Risk', async (t0) => {
    riskMap = await api.risk(scenario, RISK_LOADS, RISK_RUNS, vary);
    const t = riskTable(riskMap, riskColour());
    drawRiskTable(t);
    hooks.riskReady = true;
    return `${note}Each cell: the chance of tipping within a day by chance · the mean time back after the incident. ${t.rows.length * t.head.length - t.rows.length} cells in ${since(t0)}.`;
  });
}

// The step-down experiment.
let stepDownChart: StepDownChart | null = null;
async function drawStepDown() {
  const sent = S.sent;
  if (!sent) return;
  hooks.stepDownReady = false;
  await runPanel('stepdown', 'Stepping the load up and back down…', 'Step-down', async (t0) => {
    const d = await api.stepDown(sent, STEP_DOWN);
    stepDownChart ??= new StepDownChart($('stepdown-chart'));
    stepDownChart.render(d);
    const summary = stepDownSummary(d);
    $('stepdown-chart').setAttribute('aria-label', summary);
    hooks.stepDownReady = true;
    return `${summary} ${fmtNum(d.hold_s, 0)} s at each load; ${since(t0)}.`;
  });
}

// Amplification against the failure rate.
let ampChart: AmpChart | null = null;
async function drawAmplification() {
  const sent = S.sent;
  if (!sent) return;
  hooks.ampReady = false;
  await runPanel('amp', `Injecting failures from 0% to 50% under ${AMP_POLICIES.length} policies…`, 'Amplification', async (t0) => {
    const answers = await Promise.all(AMP_POLICIES.map((p, i) => api.amplification(ampScenario(sent, p), i, SHARES)));
    const series = answers.map((a) => ampSeries(a.rows));
    const names = AMP_POLICIES.map((p) => p.name);
    ampChart ??= new AmpChart($('amp-chart'));
    ampChart.render(names, series[0].shares, series.map((s) => s.attempts));
    const summary = ampSummary(names, series.map((s) => s.attempts), series[0].shares);
    $('amp-chart').setAttribute('aria-label', summary);
    hooks.ampReady = true;
    return `${summary} ${since(t0)}.`;
  });
}

// ---------- exports ----------
function exportData() {
  const r = S.result;
  const base = {
    tool: 'retrystorm',
    exported_at: new Date().toISOString(),
    link: location.href,
    scenario: S.sent ?? S.scenario,
    metrics: r?.metrics ?? null,
    verdict: r?.verdict ?? null,
    montecarlo: r?.montecarlo ? { runs: r.montecarlo.runs, seed: r.montecarlo.seed, metrics: r.montecarlo.metrics } : null,
  };
  if (isSessions(r)) return { ...base, engine: 'sessions', ladder: r.ladder ?? null, hours: windowHours(r.hours, pickWindow(r)), advice: r.advice ?? [] };
  const d = chartCtx.data;
  // The charts' series, per second as drawn (the backlog is a level, not a rate).
  const series = d ? {
    t_s: d.t, first_attempts_per_s: d.first, retries_per_s: d.retries, capacity_per_s: d.capacity, goodput_per_s: d.goodput,
    served_late_per_s: d.late, failed_per_s: d.failed, backlog: d.backlog,
    ...(d.pooled ? { waiting_for_connection: d.pooled } : {}),
    ...(d.goodputBand ? { goodput_low_per_s: d.goodputBand.low, goodput_high_per_s: d.goodputBand.high } : {}),
  } : null;
  return { ...base, series, trace: r?.trace ?? [], goodput_table: r?.goodput_table ?? [] };
}
function download(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// ---------- configuration export (live) ----------
let exportPending: Promise<void> | null = null;
/** Fetches the export of the scenario on screen for the chosen system; Copy and Download wait for it. */
function refreshExport(): Promise<void> {
  const sc = S.sent ?? S.scenario;
  if (!sc || S.sessions) return Promise.resolve();
  const system = $<HTMLSelectElement>('export-system').value;
  const panel = $('envoy-panel');
  const ta = $<HTMLTextAreaElement>('envoy-yaml');
  const forKey = JSON.stringify(sc);
  panel.dataset.ready = 'false';
  const graph = isGraph(sc);
  const p = api.exportConfig(system, sc, graph ? Number($<HTMLSelectElement>('export-call').value || 0) : undefined).then((x) => {
    if (exportPending !== p) return;
    ta.value = x.text;
    const notes = $('export-notes');
    notes.replaceChildren(...(x.notes ?? []).map((n) => { const li = document.createElement('li'); li.textContent = n; return li; }));
    panel.dataset.ready = 'true';
    panel.dataset.for = forKey;
    panel.dataset.system = system;
    panel.dataset.extension = x.extension ?? 'txt'; // the server's systems table
  }).catch((e) => {
    if (!isAbort(e)) showError(`Export: ${e instanceof Error ? e.message : String(e)}`);
  });
  exportPending = p;
  return p;
}

async function copyText(text: string, ta?: HTMLTextAreaElement): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (ta) {
      ta.select();
      return document.execCommand('copy');
    }
    return false;
  }
}

// ---------- theme ----------
function setTheme(t: 'light' | 'dark', save = true) {
  document.documentElement.dataset.theme = t;
  const b = $('theme-toggle');
  b.textContent = t === 'dark' ? 'Light theme' : 'Dark theme';
  b.setAttribute('aria-pressed', String(t === 'dark'));
  if (save) try { localStorage.setItem('retrystorm-theme', t); } catch { /* private mode */ }
  charts.rebuild();
  occupancy.rebuild();
  phaseMap.draw();
}

/**
 * A phone's inputs as a sheet over the lower half of the screen; opening it
 * brings the chart to the top, so a change and its effect are on one screen.
 */
function setSheet(open: boolean) {
  const b = $('sheet-toggle');
  document.body.dataset.sheet = open ? 'open' : 'closed';
  b.setAttribute('aria-expanded', String(open));
  b.textContent = open ? 'Close inputs' : 'Inputs';
  if (!open) { b.focus(); return; }
  const chart = [...document.querySelectorAll<HTMLElement>('#chart, #occupancy-chart')].find((e) => e.offsetParent !== null);
  if (chart) window.scrollBy(0, chart.getBoundingClientRect().top - 8);
  $('controls').scrollTop = 0;
  $('controls').querySelector<HTMLElement>('input, select')?.focus({ preventScroll: true });
}

/** Shows the state of the link: a step through the history, or a link typed in. Makes no new step. */
function applyLink() {
  nav.step = false;
  showHistory();
  const st = linkState();
  if (!st) return;
  const preset = S.presets.find((p) => p.name === st.preset)!;
  const want = applySet(preset.scenario, st.set);
  if (st.preset !== S.preset?.name) selectPreset(st.preset, st.set);
  else if (!S.scenario || diffScenario(want, S.scenario, S.schema).length) loadScenario(want); // the same preset: zoom and ladder stay
}


/** The link's preset and the settings the page can apply; says what it dropped and why. */
function linkState(): { preset: string; set: [string, string | number | boolean][] } | null {
  if (!location.hash) { showLinkNote([]); return null; }
  const st = decodeState(location.hash, types());
  const notes: Ignored[] = [];
  let preset = st.preset && S.presets.find((p) => p.name === st.preset);
  if (!preset) {
    if (st.preset !== null) notes.push({ path: 'preset', value: st.preset, why: `no such preset; showing ${S.presets[0].name}` });
    preset = S.presets[0];
  }
  const { kept, ignored } = filterSet(st.set, S.schema, preset.scenario);
  notes.push(...ignored);
  // Rules between keys (an incident after the run ends) drop the link's keys that break them.
  const sc = applySet(preset.scenario, kept);
  const rules = checkScenario(sc, S.schema);
  const fine = kept.filter(([p, v]) => {
    if (!rules.has(p)) return true;
    notes.push({ path: p, value: String(v), why: rules.get(p)! });
    return false;
  });
  showLinkNote(notes);
  return { preset: preset.name, set: fine };
}
function showLinkNote(notes: Ignored[]) {
  hooks.linkIgnored = notes;
  const el = $('link-note');
  el.hidden = !notes.length;
  el.textContent = notes.length ? `Ignored from the link: ${notes.map((n) => `${n.path}=${n.value} (${n.why})`).join('; ')}.` : '';
}

/** "Notifications at" in seconds after midnight, shown as a clock time beside the field. */
function notificationHint() {
  const v = S.scenario ? getPath(S.scenario, 'items.notification_at_s') : undefined;
  if (typeof v === 'number') controls?.hint('items.notification_at_s', `= ${clockOfDay(v)}`);
}

// ---------- start ----------
function wire() {
  $<HTMLSelectElement>('preset-select').addEventListener('change', (e) => { newStep(); selectPreset((e.target as HTMLSelectElement).value); });
  $('reset').addEventListener('click', () => { if (S.preset) { newStep(); selectPreset(S.preset.name); toast('Back to the preset: Undo brings your changes back'); } });
  $('undo').addEventListener('click', () => { if (nav.index > 0) history.back(); });
  $('redo').addEventListener('click', () => { if (nav.index < nav.top) history.forward(); });
  document.addEventListener('keydown', (e) => {
    // Fields keep their own undo of what is typed in them.
    if (!(e.ctrlKey || e.metaKey) || (e.target as HTMLElement).closest('input, textarea, select')) return;
    const k = e.key.toLowerCase();
    if (k === 'z' && !e.shiftKey && nav.index > 0) { e.preventDefault(); history.back(); }
    else if (((k === 'z' && e.shiftKey) || k === 'y') && nav.index < nav.top) { e.preventDefault(); history.forward(); }
  });
  $('pin-add').addEventListener('click', addPin);
  $('sheet-toggle').addEventListener('click', () => setSheet(document.body.dataset.sheet !== 'open'));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && document.body.dataset.sheet === 'open') setSheet(false); });
  wirePins();
  $('share').addEventListener('click', async () => {
    syncUrl();
    toast((await copyText(location.href)) ? 'Link copied' : 'Link is in the address bar');
  });
  $('export-json').addEventListener('click', async () => {
    await loadTrace();
    download(`${fileBase(S)}.json`, JSON.stringify(exportData(), null, 2), 'application/json');
  });
  $('export-envoy').addEventListener('click', async () => {
    if (!S.scenario || S.sessions) return;
    $('envoy-panel').hidden = false;
    await refreshExport();
    $<HTMLTextAreaElement>('envoy-yaml').focus();
  });
  $('export-system').addEventListener('change', () => void refreshExport());
  $('export-call').addEventListener('change', () => void refreshExport());
  $<HTMLInputElement>('graph-time').addEventListener('input', (e) => graphView.setIndex(Number((e.target as HTMLInputElement).value)));
  $<HTMLSelectElement>('graph-colour').addEventListener('change', (e) => graphView.setColourBy((e.target as HTMLSelectElement).value as ColourBy));
  // Copy and Download take the text of the inputs on screen, never an older one.
  $('envoy-copy').addEventListener('click', async () => {
    await exportPending;
    const ta = $<HTMLTextAreaElement>('envoy-yaml');
    toast((await copyText(ta.value, ta)) ? 'Configuration copied' : 'Copy failed: select the text and copy it');
  });
  $('envoy-download').addEventListener('click', async () => {
    await exportPending;
    const system = $<HTMLSelectElement>('export-system').value;
    download(`${fileBase(S)}-${system}.${$('envoy-panel').dataset.extension ?? 'txt'}`, $<HTMLTextAreaElement>('envoy-yaml').value, 'text/plain');
  });
  $('trace-event').addEventListener('click', () => void loadTrace().then(() => (loadedTrace() ? traceToNextEvent() : traceNotLoaded())));
  wireImport();
  $('envoy-close').addEventListener('click', () => { $('envoy-panel').hidden = true; $('export-envoy').focus(); });
  $('theme-toggle').addEventListener('click', () => setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
  $<HTMLInputElement>('show-backlog').addEventListener('change', (e) => charts.setBacklogVisible((e.target as HTMLInputElement).checked));
  // A control moves the trace once it is there; while it is not (its request
  // failed), it says so and the next use asks again.
  const withTrace = (step: () => void) => loadTrace().then(() => {
    if (!loadedTrace()) { traceNotLoaded(); showTrace(false); return; }
    step();
    showTrace();
  });
  $('trace-start').addEventListener('click', () => withTrace(() => { S.trace = traceStart(S.trace); }));
  $('trace-next').addEventListener('click', () => withTrace(() => { S.trace = traceNext(S.trace); }));
  $('trace-all').addEventListener('click', () => withTrace(() => { S.trace = traceAll(S.trace); }));
  $<HTMLInputElement>('trace-slider').addEventListener('input', (e) => {
    const v = Number((e.target as HTMLInputElement).value);
    void withTrace(() => { S.trace = traceSeek(S.trace, v); });
  });
  $('trace-list').addEventListener('click', (e) => {
    const i = (e.target as HTMLElement).closest<HTMLElement>('button.trace-time')?.dataset.i;
    if (i !== undefined) { S.trace = traceSeek(S.trace, Number(i) + 1); showTrace(); }
  });
  $('mc-stop').addEventListener('click', () => api.stopMonteCarlo());
  $('phase-draw').addEventListener('click', () => void drawPhase());
  $('risk-draw').addEventListener('click', () => void drawRisk());
  $('risk-colour').addEventListener('change', () => { if (riskMap) drawRiskTable(riskTable(riskMap, riskColour())); });
  $('stepdown-draw').addEventListener('click', () => void drawStepDown());
  $('amp-draw').addEventListener('click', () => void drawAmplification());
  for (const w of ['x', 'y'] as const) {
    $(`phase-${w}`).addEventListener('change', () => {
      phaseChoice[w] = $<HTMLSelectElement>(`phase-${w}`).value;
      if (S.scenario) fillAxisInputs(w, S.scenario);
    });
  }
  const pm = $('phase-map');
  pm.addEventListener('focus', () => phaseMap.draw());
  pm.addEventListener('blur', () => phaseMap.draw());
  // Back, Forward, Undo, Redo and a link typed into the address bar.
  window.addEventListener('popstate', (e) => {
    const rs = (e.state as { rs?: unknown } | null)?.rs;
    if (typeof rs === 'number') nav.index = rs;
    applyLink();
  });
  window.addEventListener('hashchange', applyLink);
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', (e) => {
    let saved: string | null = null;
    try { saved = localStorage.getItem('retrystorm-theme'); } catch { /* ignore */ }
    if (!saved) setTheme(e.matches ? 'dark' : 'light', false);
  });
}

async function start() {
  wire();
  setTheme(document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light', false);
  try {
    const [presets, schema] = await Promise.all([api.presets(), api.schema()]);
    // Graph presets last, in a group of their own: the page shows them with the graph view.
    S.presets = [...presets.filter((p) => !isGraph(p.scenario)), ...presets.filter((p) => isGraph(p.scenario))];
    S.schema = schema;
  } catch (e) {
    showError(`Cannot reach the retrystorm server: ${e instanceof Error ? e.message : String(e)}`);
    return;
  }
  const sel = $<HTMLSelectElement>('preset-select');
  const option = (p: Preset) => { const o = document.createElement('option'); o.value = p.name; o.textContent = p.name; o.title = p.description; return o; };
  const graphs = document.createElement('optgroup');
  graphs.label = 'Service graphs';
  graphs.append(...S.presets.filter((p) => isGraph(p.scenario)).map(option));
  sel.replaceChildren(...S.presets.filter((p) => !isGraph(p.scenario)).map(option), ...(graphs.children.length ? [graphs] : []));
  controls = new Controls($('controls'), S.schema, onControl, markInvalid);
  if (!S.presets.length) { showError('The server has no presets.'); return; }
  const st = linkState() ?? { preset: S.presets[0].name, set: [] };
  const rs = (history.state as { rs?: unknown } | null)?.rs;
  if (typeof rs === 'number') nav.index = nav.top = rs; // a reload keeps the steps before it
  pinsFromLink();
  selectPreset(st.preset, st.set);
  // Ready once the first result is on screen.
  const t = setInterval(() => {
    if (S.result) {
      hooks.ready = true;
      document.body.dataset.ready = 'true';
      clearInterval(t);
    }
  }, 20);
}

void start();

/** The import box: configuration files in, scenario keys out (POST /api/import). */
function wireImport() {
  const panel = $('import-panel');
  const result = $('import-result');
  const line = (text: string, cls = '') => {
    const li = document.createElement('li');
    li.textContent = text;
    if (cls) li.className = cls;
    result.append(li);
  };
  $('import-open').addEventListener('click', () => {
    panel.hidden = false;
    $('import-files').focus();
  });
  $('import-close').addEventListener('click', () => {
    panel.hidden = true;
    $('import-open').focus();
  });
  $('import-apply').addEventListener('click', async () => {
    result.replaceChildren();
    const files: { name: string; text: string }[] = [];
    for (const f of Array.from($<HTMLInputElement>('import-files').files ?? [])) files.push({ name: f.name, text: await f.text() });
    const pasted = $<HTMLTextAreaElement>('import-text').value;
    if (pasted.trim()) files.push({ name: 'pasted', text: pasted });
    if (!files.length) return line('Choose a file or paste a configuration first.', 'warn');
    try {
      const r = await api.importConfigs(files);
      if (!S.scenario) return;
      const next = clone(S.scenario);
      for (const [p, v] of Object.entries(r.keys)) setPath(next as Record<string, unknown>, p, v);
      line(`Read ${r.formats.join(', ')}: ${Object.keys(r.keys).length} keys applied.`);
      for (const w of r.warnings) line(w, 'warn');
      newStep();
      loadScenario(next);
    } catch (e) {
      line(`Import failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  });
}
