// Debounce with an optional leading call: the first change of a burst runs at
// once (so one click redraws without waiting), later ones in the burst are
// coalesced into one trailing call.

export interface Debounced<A extends unknown[]> {
  (...args: A): void;
  cancel(): void;
  flush(): void;
}

export function debounce<A extends unknown[]>(
  fn: (...args: A) => void,
  ms: number,
  opts: { leading?: boolean } = {},
): Debounced<A> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let pending: A | null = null;
  const fire = () => {
    timer = null;
    if (pending) {
      const a = pending;
      pending = null;
      timer = setTimeout(fire, ms); // keep the burst window open after a trailing call
      fn(...a);
    }
  };
  const d = ((...args: A) => {
    if (timer === null && opts.leading) {
      timer = setTimeout(fire, ms);
      fn(...args);
      return;
    }
    pending = args;
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(fire, ms);
  }) as Debounced<A>;
  d.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    pending = null;
  };
  d.flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (pending) {
      const a = pending;
      pending = null;
      fn(...a);
    }
  };
  return d;
}
