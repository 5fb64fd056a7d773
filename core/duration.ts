/**
 * Durations read and written as text, in one place. The CLI keeps its own
 * (cli/duration.ts: compound `1h30m` and bare seconds, for flags): cli/
 * imports no server code, as it is shipped alone.
 */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `500ms`, `10s`, `1m`, `2h` (one amount, one unit) into milliseconds; undefined otherwise. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const [, amount, unit] = match;
  return Math.round(Number(amount) * (UNIT_MS[unit ?? 's'] ?? 1000));
}

/** A duration as Go's `time.Duration.String()` prints it: `500ms`, `10s`, `1.5s`, `1m0s`, `1h0m0s`. */
export function goDuration(ms: number): string {
  const whole = Math.round(ms);
  if (whole === 0) return '0s';
  if (Math.abs(whole) < 1000) return `${whole}ms`;
  const sign = whole < 0 ? '-' : '';
  let rest = Math.abs(whole);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = (rest / 1000).toFixed(3).replace(/\.?0+$/, '');
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}

/** A duration as people write it: `500ms`, `10s`, `1m`, `1m30s`. */
export function shortDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
}

/** Seconds with one decimal, as the bench's tables print them: `12.3 s`. */
export function decimalSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
