import Table from 'cli-table3';

const NO_BORDER = Object.fromEntries(
  [
    'top',
    'top-mid',
    'top-left',
    'top-right',
    'bottom',
    'bottom-mid',
    'bottom-left',
    'bottom-right',
    'left',
    'left-mid',
    'mid',
    'mid-mid',
    'right',
    'right-mid',
    'middle',
  ].map((k) => [k, '']),
);

/**
 * Rows in columns two spaces apart, no borders, as Juju's tabwriter prints
 * them; `right` names the columns aligned right. Trailing spaces are trimmed.
 */
export function columns(header: string[], rows: string[][], right: number[] = []): string {
  const table = new Table({
    chars: NO_BORDER,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 2, compact: true },
    colAligns: header.map((_, i) => (right.includes(i) ? 'right' : 'left')),
  });
  table.push(header, ...rows);
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}
