/** Run `load` now and every `ms` while the view is open; errors show in `onError`, never stop the loop. */
export function poll(
  load: (signal: AbortSignal) => Promise<void>,
  ms: number,
  onError: (err: Error) => void,
): () => void {
  const stop = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    try {
      await load(stop.signal);
    } catch (err) {
      if (!stop.signal.aborted) onError(err as Error);
    }
    if (!stop.signal.aborted) timer = setTimeout(tick, ms);
  };
  void tick();
  return () => {
    stop.abort();
    clearTimeout(timer);
  };
}
