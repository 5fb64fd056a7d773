/** How long ago an ISO time was, in the CLI's two styles; a time in the future counts as now. */
function elapsedMs(iso: string, now: Date): number | undefined {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, now.getTime() - at);
}

/** `42s ago`, `5m ago`, `3h ago`, `2d ago`: short enough for a Message column. */
export function shortAgo(iso: string, now: Date): string | undefined {
  const ms = elapsedMs(iso, now);
  if (ms === undefined) return undefined;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ago`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ago`;
  return `${Math.floor(h / 24)}d ago`;
}

/**
 * Juju's friendly times for a list (`models`): `just now` under a minute,
 * then minutes, hours and days ago, and the date itself after a week.
 */
export function friendlyAgo(iso: string, now: Date): string {
  const ms = elapsedMs(iso, now);
  if (ms === undefined) return '';
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'} ago`;
  const m = Math.floor(ms / 60_000);
  if (m < 1) return 'just now';
  if (m < 60) return unit(m, 'minute');
  const h = Math.floor(m / 60);
  if (h < 24) return unit(h, 'hour');
  const d = Math.floor(h / 24);
  if (d < 7) return unit(d, 'day');
  return iso.slice(0, 10);
}
