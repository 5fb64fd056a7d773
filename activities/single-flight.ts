/**
 * Concurrent reads of one key share one call: a read that arrives while
 * another for the same key is in flight gets that one's answer, which is no
 * older than a read made a moment earlier. Nothing is kept once it settles.
 * (A thousand machines planned together read their model once per round
 * trip instead of once each.)
 */
export class SingleFlight<V> {
  private readonly inFlight = new Map<string, Promise<V>>();

  read(key: string, load: () => Promise<V>): Promise<V> {
    const shared = this.inFlight.get(key);
    if (shared) return shared;
    const answer = load().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, answer);
    return answer;
  }

  get pending(): number {
    return this.inFlight.size;
  }
}
