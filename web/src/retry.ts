// What the page does when the server is busy with a view asked after the
// chart (advice, ladder): asks again a few times as the server says, then
// says so. A newer run cancels the asking (main.ts).

/** The fields of an ApiError (api.ts) these read; api.ts itself needs a page to load. */
interface MaybeBusy { busy?: boolean; retryAfterS?: number | null }

/** Times a view is asked again after busy answers: past that the server is loaded, not briefly full. */
export const BUSY_TRIES = 3;

/** The server had no room for the request now (503 with `"busy": true`). */
export const isBusy = (e: unknown): boolean => typeof e === 'object' && e !== null && (e as MaybeBusy).busy === true;

/** Seconds to wait as the server asks (Retry-After), kept within 1..30; 2 when it does not say. */
export const busyWaitS = (retryAfterS: number | null | undefined): number => Math.min(Math.max(retryAfterS ?? 2, 1), 30);

/** Seconds before asking again after error `e`, when `tries` asks again were made already; null: do not. */
export function askAgainIn(e: unknown, tries: number): number | null {
  if (!isBusy(e) || tries >= BUSY_TRIES) return null;
  return busyWaitS((e as MaybeBusy).retryAfterS);
}

/** What a refused or failed request says, for a line of the page. */
export function refusal(e: unknown): string {
  return e instanceof Error && e.message ? e.message : 'the server did not answer';
}

/** The advice list's line when the advice failed; wait: seconds before it is asked again (null: it is not). */
export function adviceErrorText(e: unknown, wait: number | null): string {
  if (wait !== null) return `The server is busy; asking for advice again in ${wait} s.`;
  if (isBusy(e)) return 'No advice: the server stayed busy. Change any input to ask again.';
  return `No advice for this run: ${refusal(e)}`;
}

/** The ladder's note when its rows failed; wait as for adviceErrorText. */
export function ladderErrorText(e: unknown, wait: number | null): string {
  if (wait !== null) return `The server is busy; asking for the ladder again in ${wait} s.`;
  if (isBusy(e)) return 'No ladder: the server stayed busy. Change any input to ask again.';
  return `The server refused the ladder for these inputs: ${refusal(e)}`;
}

/** The views asked again after busy answers. */
export type AskedView = 'advice' | 'ladder';

/** The note of a view whose asking again a newer run cancelled, when that run then failed. */
export function askingStoppedText(view: AskedView): string {
  return `No ${view}: the server was busy, and the newer inputs did not run. Change any input to ask again.`;
}
