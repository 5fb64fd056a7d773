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

/** How `columns` lays out a table beyond its cells. */
export interface ColumnsOptions {
  /** The columns aligned right, or a cell's own test (header cells included). */
  right?: readonly number[] | ((cell: string, column: number) => boolean);
  /** A rule of dashes under the header, as wide as each column. */
  rule?: boolean;
}

/**
 * Rows in columns two spaces apart, no borders, as Juju's tabwriter prints
 * them; `right` names the columns aligned right (or, as options, tests each
 * cell). Trailing spaces are trimmed. The CLI's tables and the bench's
 * (bench/table.ts) are all drawn here.
 */
export function columns(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  layout: readonly number[] | ColumnsOptions = [],
): string {
  const options: ColumnsOptions = Array.isArray(layout)
    ? { right: layout as readonly number[] }
    : (layout as ColumnsOptions);
  const right = options.right ?? [];
  const alignsRight =
    typeof right === 'function' ? right : (_cell: string, column: number) => right.includes(column);
  const table = new Table({
    chars: NO_BORDER,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 2, compact: true },
  });
  const cells = (row: readonly string[]): Table.HorizontalTableRow =>
    row.map((content, i) => ({
      content,
      hAlign: alignsRight(content, i) ? ('right' as const) : ('left' as const),
    }));
  const all = [header, ...rows];
  const ruled = options.rule
    ? [
        header,
        header.map((_, i) => '-'.repeat(Math.max(...all.map((r) => (r[i] ?? '').length)))),
        ...rows,
      ]
    : all;
  table.push(...ruled.map(cells));
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}
