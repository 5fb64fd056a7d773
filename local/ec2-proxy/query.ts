/**
 * EC2 Query protocol requests: `Action=RunInstances&Version=2016-11-15&…`, as a
 * form-urlencoded POST body (what the AWS SDKs send) or a GET query string.
 */

/** Parameters in the order they came, names and values decoded. */
export type QueryParams = ReadonlyArray<readonly [string, string]>;

export function parseQuery(text: string): Array<[string, string]> {
  return [...new URLSearchParams(text)];
}

export function encodeQuery(params: QueryParams): string {
  return new URLSearchParams(params.map(([k, v]): [string, string] => [k, v])).toString();
}

export function paramValue(params: QueryParams, name: string): string | undefined {
  return params.find(([k]) => k === name)?.[1];
}

/** The action a request asks for, when it names a plausible EC2 action. */
export function queryAction(params: QueryParams): string | undefined {
  const action = paramValue(params, 'Action');
  return action !== undefined && /^[A-Z][A-Za-z0-9]{1,127}$/.test(action) ? action : undefined;
}

export interface QueryFilter {
  readonly name: string;
  readonly values: readonly string[];
}

export interface SplitFilters {
  /** The filters whose names were asked for, in request order. */
  readonly taken: readonly QueryFilter[];
  /** Every other parameter; the filters left behind renumbered from 1 (moto stops at a gap). */
  readonly rest: Array<[string, string]>;
}

const FILTER_PARAM = /^Filter\.(\d+)\.(Name|Value\.(\d+))$/;

/**
 * Takes the `Filter.N.Name` / `Filter.N.Value.M` filters named in `names` out of
 * a request, so the proxy can apply them itself.
 */
export function takeFilters(params: QueryParams, names: ReadonlySet<string>): SplitFilters {
  const byIndex = new Map<number, { name?: string; values: Array<[number, string]> }>();
  const rest: Array<[string, string]> = [];
  for (const [key, value] of params) {
    const m = FILTER_PARAM.exec(key);
    if (!m) {
      rest.push([key, value]);
      continue;
    }
    const index = Number(m[1]);
    const entry = byIndex.get(index) ?? { values: [] };
    byIndex.set(index, entry);
    if (m[2] === 'Name') entry.name = value;
    else entry.values.push([Number(m[3]), value]);
  }
  const taken: QueryFilter[] = [];
  let next = 1;
  for (const index of [...byIndex.keys()].sort((a, b) => a - b)) {
    const entry = byIndex.get(index);
    if (!entry) continue;
    const values = entry.values.sort((a, b) => a[0] - b[0]).map(([, v]) => v);
    if (entry.name !== undefined && names.has(entry.name)) {
      taken.push({ name: entry.name, values });
      continue;
    }
    const n = next++;
    if (entry.name !== undefined) rest.push([`Filter.${n}.Name`, entry.name]);
    values.forEach((v, i) => rest.push([`Filter.${n}.Value.${i + 1}`, v]));
  }
  return { taken, rest };
}

/** EC2 filter value matching: `*` any run of characters, `?` one character, case-sensitive. */
export function filterValueMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split('')
    .map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 's').test(value);
}

/** A filter with no values matches nothing, as in moto. */
export function filterMatches(filter: QueryFilter, value: string): boolean {
  return filter.values.some((pattern) => filterValueMatches(pattern, value));
}

/** EC2 takes at most this many values in the filters of one call (FilterLimitExceeded beyond). */
export const MAX_FILTER_VALUES = 200;

/**
 * EC2's refusal of a call whose filters carry more than 200 values in all,
 * as AWS words it; undefined when the call is within the limit. moto takes
 * any number, so without this a caller that sends 1,000 ids in one filter
 * passes every local test and never completes in AWS.
 */
export function filterLimitRefusal(params: QueryParams): string | undefined {
  const values = params.filter(([k]) => FILTER_PARAM.exec(k)?.[3] !== undefined).length;
  return values > MAX_FILTER_VALUES
    ? `The maximum number of filter values specified on a single call is ${MAX_FILTER_VALUES}`
    : undefined;
}
