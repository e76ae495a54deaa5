// Reading and writing scenario paths: dotted names ("client.backoff.base_s") and list
// items by index, as the server's keys name a graph's calls ("calls[2].retries").

/** The steps of a path: names, and list indices as numbers. */
function steps(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const part of path.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) { out.push(part); continue; }
    if (m[1]) out.push(m[1]);
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(i[1]));
  }
  return out;
}

export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const k of steps(path)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[k];
  }
  return cur;
}

/** Sets the value at `path`, making the objects on the way; `undefined` removes the key. */
export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = steps(path);
  let cur = obj as Record<string | number, unknown>;
  for (let i = 0; i < keys.length - 1; i++) {
    const next = cur[keys[i]];
    if (next === null || typeof next !== 'object') {
      if (value === undefined) return; // nothing there to remove
      cur[keys[i]] = typeof keys[i + 1] === 'number' ? [] : {};
    }
    cur = cur[keys[i]] as Record<string | number, unknown>;
  }
  const last = keys[keys.length - 1];
  if (value === undefined && !Array.isArray(cur)) delete cur[last];
  else cur[last] = value;
}

export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** Paths the page never builds controls for. */
export const HIDDEN_PATHS = new Set(['ladder', 'name', 'description']);

export function isHidden(path: string): boolean {
  return HIDDEN_PATHS.has(path.split('.')[0]);
}
