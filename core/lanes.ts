/**
 * Runs `work` over `items`, at most `lanes` at once. After a failure no new
 * item is begun; the first failure is thrown once the items begun have ended.
 */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  async function lane(): Promise<void> {
    // after a failure no new item is begun (a Temporal outage would time each one out)
    while (next < items.length && !failure) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, lane));
  if (failure) throw failure.err;
}
