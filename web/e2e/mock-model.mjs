// A small JavaScript copy of the fluid model (../../../shared/spec/fluid-model.md),
// used ONLY by mock-server.mjs so the page can be developed before the C++ server
// exists. The real numbers come from the C++ engine; this file is not shipped.

export const PRESETS = {
  'order-status': {
    name: 'order-status',
    description: 'An order-status service loses 60% of its capacity for 20 s while clients retry 3 times.',
    engine: 'fluid', horizon_s: 300, step_s: 1, service_completes: 'start',
    demand: { rate_per_s: 80 },
    server: { capacity_per_s: 100, queue_limit: 0, shed_abandoned: false },
    incident: { start_s: 60, duration_s: 20, capacity_factor: 0.4, demand_factor: 1 },
    client: { timeout_s: 5, layers: 1, retries: 3,
      backoff: { base_s: 1, multiplier: 2, cap_s: 0, jitter: 'none' },
      budget: { kind: 'none', ratio: 0.1, window_s: 10 } },
    recovery: { goodput_fraction: 0.9, criterion: 'goodput' },
    ladder: { mode: 'single', rows: [
      { name: 'Current policy', change: 'As configured.', set: {} },
      { name: 'No retries', change: 'retries 0', set: { 'client.retries': 0 } },
      { name: 'Longer backoff', change: 'backoff base 8 s', set: { 'client.backoff.base_s': 8 } },
      { name: '10% retry budget', change: 'token bucket, ratio 0.1', set: { 'client.budget.kind': 'token_bucket', 'client.budget.ratio': 0.1 } },
      { name: 'Shed abandoned work', change: 'drop queued work whose caller left', set: { 'server.shed_abandoned': true } },
      { name: 'Queue limit 300', change: 'bounded queue', set: { 'server.queue_limit': 300 } },
      { name: 'Timeout 15 s', change: 'longer client timeout', set: { 'client.timeout_s': 15 } },
    ] },
  },
  'primary-failover': {
    name: 'primary-failover',
    description: 'The primary fails over and serves nothing for 15 s at 60% load; clients use jittered backoff with 3 attempts.',
    engine: 'fluid', horizon_s: 120, step_s: 0.05, service_completes: 'end',
    demand: { rate_per_s: 600 },
    server: { capacity_per_s: 1000, queue_limit: 0, shed_abandoned: false },
    incident: { start_s: 10, duration_s: 15, capacity_factor: 0, demand_factor: 1 },
    client: { timeout_s: 1, layers: 1, retries: 2,
      backoff: { base_s: 0.1, multiplier: 2, cap_s: 2, jitter: 'full' },
      budget: { kind: 'none', ratio: 0.1, window_s: 10 } },
    recovery: { goodput_fraction: 0.9, criterion: 'failures' },
    ladder: { mode: 'cumulative', rows: [
      { name: 'No retries', change: 'One attempt per request.', set: { 'client.retries': 0 } },
      { name: 'Immediate retries', change: '3 attempts, no delay.', set: { 'client.retries': 2, 'client.backoff.base_s': 0, 'client.backoff.cap_s': 0, 'client.backoff.jitter': 'none' } },
      { name: '+ Backoff with jitter', change: 'exponential from 100 ms, cap 2 s', set: { 'client.backoff.base_s': 0.1, 'client.backoff.cap_s': 2, 'client.backoff.jitter': 'full' } },
      { name: '+ 10% retry budget', change: 'window budget', set: { 'client.budget.kind': 'window', 'client.budget.ratio': 0.1 } },
      { name: '+ Shed abandoned work', change: 'shed', set: { 'server.shed_abandoned': true } },
    ] },
  },
};

export const SCHEMA = [
  ['incident.start_s', 'number', 0, 10000, 1, 's', 'incident', 'Incident starts at', 'When capacity drops.'],
  ['incident.duration_s', 'number', 0, 10000, 0.5, 's', 'incident', 'Incident lasts', 'How long the capacity drop lasts.'],
  ['incident.capacity_factor', 'number', 0, 1, 0.05, '', 'incident', 'Capacity during incident', 'Multiplier; 0 is an outage.'],
  ['incident.demand_factor', 'number', 0, 10, 0.1, '', 'incident', 'Demand during incident', 'Multiplier; above 1 is a surge.'],
  ['demand.rate_per_s', 'number', 0, 100000, 1, '/s', 'demand_server', 'Demand', 'New user requests per second.'],
  ['server.capacity_per_s', 'number', 0, 100000, 1, '/s', 'demand_server', 'Capacity', 'Requests the server completes per second.'],
  ['server.queue_limit', 'number', 0, 1e6, 10, '', 'demand_server', 'Queue limit', '0 means unbounded.'],
  ['server.shed_abandoned', 'boolean', 0, 0, 0, '', 'demand_server', 'Shed abandoned work', 'Drop queued work whose caller gave up.'],
  ['client.timeout_s', 'number', 0.05, 600, 1, 's', 'client', 'Timeout', 'Client gives up after this.'],
  ['client.layers', 'integer', 1, 5, 1, '', 'client', 'Retrying layers', 'Layers stacked above the dependency.'],
  ['client.retries', 'integer', 0, 20, 1, '', 'client', 'Retries per layer', 'Attempts per layer = retries + 1.'],
  ['client.backoff.base_s', 'number', 0, 60, 0.1, 's', 'client', 'Backoff base', 'First retry delay window.'],
  ['client.backoff.multiplier', 'number', 1, 10, 0.5, '', 'client', 'Backoff multiplier', 'Growth per retry.'],
  ['client.backoff.cap_s', 'number', 0, 600, 0.5, 's', 'client', 'Backoff cap', '0 means no cap.'],
  ['client.backoff.jitter', 'enum', 0, 0, 0, '', 'client', 'Jitter', 'How delays are spread.', ['none', 'full', 'equal']],
  ['client.budget.kind', 'enum', 0, 0, 0, '', 'client', 'Retry budget', 'Caps retries as a share of traffic.', ['none', 'token_bucket', 'window']],
  ['client.budget.ratio', 'number', 0, 1, 0.01, '', 'client', 'Budget ratio', 'Retries per first attempt.'],
  ['client.budget.window_s', 'number', 0.05, 600, 1, 's', 'client', 'Budget window', 'Window or bucket size.'],
  ['horizon_s', 'number', 1, 3600, 10, 's', 'run', 'Horizon', 'Length of the run.'],
  ['step_s', 'number', 0.01, 10, 0.05, 's', 'run', 'Step', 'Model step.'],
  ['service_completes', 'enum', 0, 0, 0, '', 'run', 'Service completes at', 'start or end of the step.', ['start', 'end']],
  ['recovery.goodput_fraction', 'number', 0, 1, 0.05, '', 'run', 'Goodput recovery level', 'Share of demand that counts as recovered.'],
  ['recovery.criterion', 'enum', 0, 0, 0, '', 'run', 'Recovery means', 'Which recovery time the verdict uses.', ['failures', 'goodput']],
].map(([path, type, min, max, step, unit, group, label, help, values]) => {
  const k = { path, type, unit, group, label, help };
  if (type === 'integer' || type === 'number') Object.assign(k, { min, max, step });
  if (values) k.values = values;
  return k;
});

export const clone = (o) => JSON.parse(JSON.stringify(o));
export function getPath(o, p) { return p.split('.').reduce((a, k) => (a == null ? a : a[k]), o); }
export function setPath(o, p, v) {
  const ks = p.split('.'); let c = o;
  for (let i = 0; i < ks.length - 1; i++) { if (c[ks[i]] == null) c[ks[i]] = {}; c = c[ks[i]]; }
  c[ks[ks.length - 1]] = v;
}

export function run(sc) {
  const dt = sc.step_s, N = Math.round(sc.horizon_s / dt);
  const K = Math.round(sc.client.timeout_s / dt);
  const startMode = sc.service_completes === 'start';
  const cl = sc.client, inc = sc.incident;
  const attempts = Math.pow(cl.retries + 1, cl.layers);
  const eps = 1e-9;
  const inInc = (t) => inc.start_s <= t * dt + eps && t * dt + eps < inc.start_s + inc.duration_s;
  const queue = []; // {amt, sent, att, gone}
  const due = new Map(); // step -> Map(att -> amt)
  const addDue = (step, att, amt) => {
    if (amt <= 0) return;
    let m = due.get(step); if (!m) { m = new Map(); due.set(step, m); }
    m.set(att, (m.get(att) || 0) + amt);
  };
  const S = {}; for (const k of ['t_s', 'capacity', 'first_attempts', 'retries', 'goodput', 'served_late', 'failed', 'shed', 'rejected', 'backlog', 'gave_up', 'budget_denied']) S[k] = new Array(N).fill(0);
  let tokens = cl.budget.ratio * sc.demand.rate_per_s * cl.budget.window_s;
  const tokCap = tokens;
  const W = Math.max(1, Math.round(cl.budget.window_s / dt));
  const ratioEff = Math.pow(1 + cl.budget.ratio, cl.layers) - 1;
  let userFailed = 0, users = 0, served = 0, late = 0, peak = 0;
  const trace = [];
  let saidBacklog = false, saidLate = false;
  const failAttempt = (t, att, amt, failInstant) => {
    if (att >= attempts) { S.failed[t] += amt; userFailed += amt; return; }
    const k = att; // retry number k sends attempt k+1
    let w = cl.backoff.base_s * Math.pow(cl.backoff.multiplier, k - 1);
    if (cl.backoff.cap_s > 0) w = Math.min(w, cl.backoff.cap_s);
    const base = startMode ? failInstant : (t + 1) * dt;
    const stepOf = (d) => Math.max(t + 1, Math.floor((base + d) / dt + 1e-9));
    let lo = w, hi = w;
    if (cl.backoff.jitter === 'full') lo = 0; else if (cl.backoff.jitter === 'equal') lo = w / 2;
    if (hi - lo < 1e-12) { addDue(stepOf(w), att + 1, amt); return; }
    // split uniformly over [lo, hi)
    let d = lo;
    while (d < hi - 1e-12) {
      const s = stepOf(d);
      const nextBoundary = Math.max((s + 1) * dt - base, d + 1e-12);
      const e = Math.min(hi, nextBoundary);
      addDue(s, att + 1, amt * (e - d) / (hi - lo));
      d = e;
    }
  };
  for (let t = 0; t < N; t++) {
    S.t_s[t] = t * dt;
    let cap = sc.server.capacity_per_s * dt * (inInc(t) ? inc.capacity_factor : 1);
    S.capacity[t] = cap;
    const first = sc.demand.rate_per_s * dt * (inInc(t) ? inc.demand_factor : 1);
    users += first; S.first_attempts[t] = first;
    if (t === Math.round(inc.start_s / dt)) trace.push({ t_s: t * dt, text: `Incident starts: capacity falls to ${Math.round(cap / dt)}/s while ${Math.round(first / dt)} new requests arrive each second.` });
    if (t === Math.round((inc.start_s + inc.duration_s) / dt)) trace.push({ t_s: t * dt, text: `Incident ends: capacity is back to ${sc.server.capacity_per_s}/s; the backlog holds ${Math.round(queue.reduce((a, c) => a + c.amt, 0))} attempts.` });
    if (cl.budget.kind === 'token_bucket') tokens = Math.min(tokCap, tokens + cl.budget.ratio * first);
    let winFirst = 0, winRetry = 0;
    if (cl.budget.kind === 'window') {
      for (let s = Math.max(0, t - W + 1); s < t; s++) { winFirst += S.first_attempts[s]; winRetry += S.retries[s]; }
      winFirst += first;
    }
    const sends = [];
    const m = due.get(t); due.delete(t);
    if (m) {
      for (const att of [...m.keys()].sort((a, b) => a - b)) {
        const a = m.get(att); let take = a;
        if (cl.budget.kind === 'token_bucket') { take = Math.min(a, tokens); tokens -= take; }
        else if (cl.budget.kind === 'window') { take = Math.min(a, Math.max(0, ratioEff * winFirst - winRetry)); winRetry += take; }
        if (a - take > 0) { S.failed[t] += a - take; userFailed += a - take; S.budget_denied[t] += a - take; }
        if (take > 0) { sends.push({ amt: take, sent: t, att, gone: false }); S.retries[t] += take; }
      }
    }
    sends.push({ amt: first, sent: t, att: 1, gone: false });
    const amp = first > 0 ? (first + S.retries[t]) / first : 0; if (amp > peak) peak = amp;
    let qlen = queue.reduce((a, c) => a + c.amt, 0);
    for (const c of sends) {
      if (sc.server.queue_limit > 0) {
        const room = Math.max(0, sc.server.queue_limit - qlen);
        const adm = Math.min(room, c.amt), rej = c.amt - adm;
        if (rej > 0) { S.rejected[t] += rej; failAttempt(t, c.att, rej, t * dt); }
        if (adm > 0) { queue.push({ ...c, amt: adm }); qlen += adm; }
      } else { queue.push(c); qlen += c.amt; }
    }
    // serve
    while (cap > 1e-12 && queue.length) {
      const c = queue[0]; const take = Math.min(cap, c.amt);
      const comp = startMode ? t : t + 1;
      if (comp - c.sent <= K) S.goodput[t] += take; else S.served_late[t] += take;
      cap -= take; c.amt -= take; if (c.amt <= 1e-12) queue.shift();
    }
    served += S.goodput[t] + S.served_late[t]; late += S.served_late[t];
    if (!saidLate && S.served_late[t] > 0) { saidLate = true; trace.push({ t_s: t * dt, text: 'First responses arrive after their client gave up: that work is wasted.' }); }
    // give-ups
    const gStep = startMode ? K : K - 1;
    for (let i = 0; i < queue.length; i++) {
      const c = queue[i];
      if (!c.gone && t - c.sent >= gStep) {
        c.gone = true; S.gave_up[t] += c.amt;
        failAttempt(t, c.att, c.amt, c.sent * dt + sc.client.timeout_s);
        if (sc.server.shed_abandoned) { S.shed[t] += c.amt; c.amt = 0; }
      }
    }
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].amt <= 1e-12) queue.splice(i, 1);
    S.backlog[t] = queue.reduce((a, c) => a + c.amt, 0);
    if (!saidBacklog && S.backlog[t] > sc.server.capacity_per_s * sc.client.timeout_s) { saidBacklog = true; trace.push({ t_s: t * dt, text: 'The queue now holds more than one timeout of work: every new attempt will be served too late.' }); }
  }
  const incEnd = inc.start_s + inc.duration_s, incEndStep = Math.round(incEnd / dt);
  let gi = null;
  for (let i = N - 1; i >= 0; i--) { if (S.goodput[i] / dt < sc.recovery.goodput_fraction * sc.demand.rate_per_s - 1e-9) { gi = i + 1; break; } }
  if (gi === null) gi = 0;
  const goodRec = gi >= N ? null : Math.max(0, Math.max(gi, incEndStep) * dt - incEnd);
  let lastFail = -1; for (let i = N - 1; i >= 0; i--) if (S.failed[i] > 1e-9) { lastFail = i; break; }
  const growing = S.backlog[N - 1] > (S.backlog[N - 1 - K] ?? 0) + 1e-9;
  let failRec = lastFail < 0 ? 0 : Math.max(0, (lastFail + 1) * dt - incEnd);
  if (lastFail === N - 1 || growing) failRec = null;
  const crit = sc.recovery.criterion === 'goodput' ? goodRec : failRec;
  const lw = Math.max(1, Math.round(60 / dt));
  let lwG = 0, lwS = 0, lwF = 0, lwR = 0;
  for (let i = N - lw; i < N; i++) { lwG += S.goodput[i]; lwS += S.goodput[i] + S.served_late[i]; lwF += S.first_attempts[i]; lwR += S.retries[i]; }
  let capLw = 0; for (let i = N - lw; i < N; i++) capLw += S.capacity[i];
  const load = sc.demand.rate_per_s / sc.server.capacity_per_s;
  const peakStep = S.t_s[S.first_attempts.findIndex((f, i) => f > 0 && Math.abs((f + S.retries[i]) / f - peak) < 1e-9)] ?? 0;
  const metrics = {
    user_requests: users, failed: userFailed, failed_fraction: users ? userFailed / users : 0,
    wasted_fraction: served ? late / served : 0, peak_amplification: peak, peak_step_t_s: peakStep,
    goodput_recovery_s: goodRec, failure_recovery_s: failRec, backlog_growing: growing, recovered: crit !== null,
    last_window: { seconds: lw * dt, goodput_per_s: lwG / (lw * dt), utilization: capLw ? lwS / capLw : 0, attempts_per_request: lwF ? (lwF + lwR) / lwF : 0 },
    bound: { max_amplification: attempts, safe_load_below: 1 / attempts, load },
  };
  if (crit !== null) trace.push({ t_s: incEnd + crit, text: `Recovered ${crit.toFixed(2)} s after the incident ended.` });
  trace.sort((a, b) => a.t_s - b.t_s);
  return { S, metrics, trace, crit };
}

export function result(sc) {
  const { S, metrics, trace, crit } = run(sc);
  const incEnd = sc.incident.start_s + sc.incident.duration_s;
  const headline = crit !== null ? `Recovered ${+crit.toFixed(2)} s after the incident ended` : `Not recovered by ${sc.horizon_s} s: the incident ended at ${incEnd} s`;
  const gt = [];
  for (const ts of [sc.incident.start_s - 10, sc.incident.start_s + sc.incident.duration_s / 2, incEnd + 10, incEnd + 30, sc.horizon_s - 10]) {
    const i = Math.round(ts / sc.step_s); if (i < 0 || i >= S.t_s.length) continue;
    gt.push({ t_s: S.t_s[i], phase: ts < sc.incident.start_s ? 'before' : ts < incEnd ? 'during' : 'after', goodput_per_s: S.goodput[i] / sc.step_s });
  }
  return {
    scenario: sc, metrics,
    verdict: { recovered: crit !== null, headline, detail: `${(metrics.wasted_fraction * 100).toFixed(1)}% of the work was served after the caller gave up.` },
    series: S, goodput_table: gt,
    advice: [
      { title: 'Cap retries as a share of traffic', why: 'A retry budget bounds the load retries can add.' },
      { title: 'Drop work whose caller left', why: 'Recovery capacity otherwise goes to responses nobody reads.' },
    ],
    trace,
  };
}

export function ladderRows(sc) {
  const rows = []; let cur = clone(sc);
  for (const r of sc.ladder?.rows || []) {
    const base = sc.ladder.mode === 'single' ? clone(sc) : cur;
    for (const [p, v] of Object.entries(r.set)) setPath(base, p, v);
    if (sc.ladder.mode !== 'single') cur = base;
    rows.push({ name: r.name, change: r.change, set: r.set, scenario: clone(base), metrics: run(base).metrics });
  }
  return rows;
}

export function tipping(sc, grid = 0.5) {
  const rec = (d) => { const s = clone(sc); s.incident.duration_s = d; return run(s).crit !== null; };
  const maxD = sc.horizon_s - sc.incident.start_s;
  let on = null;
  for (let d = grid; d <= maxD + 1e-9; d += grid) if (!rec(d)) { on = +d.toFixed(6); break; }
  if (on === null) return { grid_s: grid, on_grid_s: null, exact_s: null };
  let lo = on - grid, hi = on;
  for (let i = 0; i < 30; i++) { const m = (lo + hi) / 2; if (rec(m)) lo = m; else hi = m; }
  return { grid_s: grid, on_grid_s: on, exact_s: hi };
}
