import type { Command } from 'commander';
import { Option } from 'commander';
import type { Session } from './context';
import { printStructured, type Format } from './commands/common';
import { formatPrice } from './status';
import { columns } from './table';

/** A plan as the API answers it (API.md "Plans (dry run)"). */
export interface PlannedMachine {
  id: string | null;
  units: string[];
  base: string;
  constraints: string;
  zone: string | null;
  instanceType: string | null;
  pricePerHour: number | null;
  placementGroup?: string;
  partition?: number;
}

export interface Plan {
  machines: PlannedMachine[];
  pricePerHour: number | null;
  pricePerMonth: number | null;
  estimatedSeconds: number;
  notes: string[];
}

export interface DryRunOpts {
  dryRun?: boolean;
  format: Format;
}

/** `--dry-run` and the plan's `--format` (tabular by default, or json|yaml). */
export function withDryRun(cmd: Command): Command {
  return cmd
    .option(
      '--dry-run',
      'show what would be launched, where, at what price and when; change nothing',
    )
    .addOption(
      new Option('--format <format>', 'output format of --dry-run')
        .choices(['tabular', 'json', 'yaml'])
        .default('tabular'),
    );
}

/** Seconds in words: `4 s`, `2 min 5 s`. */
export function inWords(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const min = Math.floor(seconds / 60);
  const s = seconds % 60;
  return s === 0 ? `${min} min` : `${min} min ${s} s`;
}

const price = (usd: number | null) => (usd === null ? 'unknown' : formatPrice(usd));

/** The plan as a table (machine, units, zone, type, $/h), its totals, when, and its notes. */
export function formatPlan(plan: Plan): string {
  const rows = plan.machines.map((m) => [
    m.id ?? 'new',
    m.units.join(',') || '-',
    m.zone ?? '-',
    m.instanceType ?? (m.pricePerHour === 0 ? '(container)' : '-'),
    price(m.pricePerHour),
    ...(m.placementGroup !== undefined ? [`${m.placementGroup}#${m.partition ?? '?'}`] : []),
  ]);
  const grouped = plan.machines.some((m) => m.placementGroup !== undefined);
  const header = [
    'Machine',
    'Units',
    'Zone',
    'Type',
    '$/h',
    ...(grouped ? ['Group#Partition'] : []),
  ];
  const lines = [
    plan.machines.length > 0 ? columns(header, rows, [4]) : 'Nothing to launch.',
    '',
    `Total: ${price(plan.pricePerHour)}/h, ${
      plan.pricePerMonth === null ? 'unknown' : `$${plan.pricePerMonth.toFixed(2)}`
    }/month`,
    `Last machine launched in about ${inWords(plan.estimatedSeconds)}`,
  ];
  if (plan.notes.length > 0) lines.push('', 'Notes:', ...plan.notes.map((n) => `- ${n}`));
  return `${lines.join('\n')}\n`;
}

export function printPlan(session: Session, format: Format, plan: Plan): void {
  if (format === 'tabular') session.out(formatPlan(plan));
  else printStructured(session, format, { plan });
}
