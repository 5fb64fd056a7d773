import { parse } from 'yaml';
import { uniqueName } from './api-client';
import { cliHome, CliTerminals } from './cli-terminal';
import { loadTestStack } from './stack';

/**
 * `--dry-run` on deploy, add-unit and add-machine (issue 28) as a person uses
 * it: typed at a terminal (a private tmux server), through commander and the
 * API; what is checked is the screen (the plan's table, its totals and when
 * the last machine is launched) and that status shows nothing new afterwards.
 */
const stack = loadTestStack();
const model = uniqueName('cliplan');
const { home, workdir, env } = cliHome('cli-plan-', stack, model);
const terminals = new CliTerminals(home, 'p');

async function typed(args: string[]): Promise<{ code: number; screen: string }> {
  const t = await terminals.open(args, env(), workdir);
  return t.finished(120_000);
}

/** The model as `status --format json` shows it. */
async function status(): Promise<any> {
  const s = await typed(['status', '--format', 'json']);
  expect(s.code).toBe(0);
  return JSON.parse(s.screen);
}

const HEADER = /^Machine +Units +Zone +Type +\$\/h$/m;
const TOTAL = /^Total: \$(\d+\.\d{4})\/h, \$(\d+\.\d{2})\/month$/m;
const WHEN = /^Last machine launched in about \d+ s$/m;

/** The plan's rows of new machines: units, zone, type, $/h. */
function newRows(screen: string): string[][] {
  return screen
    .split('\n')
    .filter((l) => /^new +/.test(l))
    .map((l) => l.trim().split(/ +/).slice(1));
}

afterAll(async () => {
  await terminals.closeAll();
});

describe('--dry-run at a terminal', () => {
  it('deploy, add-unit and add-machine print the plan and change nothing', async () => {
    expect((await typed(['add-model', model, '--no-switch'])).code).toBe(0);

    // deploy: three new machines, a table, totals and when
    const deploy = await typed([
      'deploy',
      'wordpress',
      '--base',
      'ubuntu@22.04',
      '-n',
      '3',
      '--dry-run',
    ]);
    expect(deploy.code).toBe(0);
    expect(deploy.screen).toMatch(HEADER);
    const rows = newRows(deploy.screen);
    expect(rows.map((r) => r[0])).toEqual(['wordpress/0', 'wordpress/1', 'wordpress/2']);
    for (const r of rows) {
      expect(r[1]).toMatch(/^us-east-1[a-f]$/);
      expect(r[2]).toMatch(/^[a-z0-9]+\.[a-z0-9]+$/);
      expect(r[3]).toMatch(/^\$\d+\.\d{4}$/);
    }
    // the spread: three machines of one application in three zones
    expect(new Set(rows.map((r) => r[1])).size).toBe(3);
    const [, perHour, perMonth] = TOTAL.exec(deploy.screen)!;
    const sum = rows.reduce((a, r) => a + Number(r[3]!.slice(1)), 0);
    expect(Number(perHour)).toBeCloseTo(sum, 3);
    expect(Number(perMonth)).toBeCloseTo(Number(perHour) * 730, 0);
    expect(deploy.screen).toMatch(WHEN);

    const nothing = await status();
    expect(nothing.applications ?? {}).toEqual({});
    expect(nothing.machines ?? {}).toEqual({});

    // add-unit needs the application: deployed with no unit (nothing launched)
    expect((await typed(['deploy', 'wordpress', '--base', 'ubuntu@22.04', '-n', '0'])).code).toBe(
      0,
    );
    const units = await typed(['add-unit', 'wordpress', '-n', '2', '--dry-run']);
    expect(units.code).toBe(0);
    expect(units.screen).toMatch(HEADER);
    expect(newRows(units.screen).map((r) => r[0])).toEqual(['wordpress/0', 'wordpress/1']);
    expect(units.screen).toMatch(TOTAL);
    expect(units.screen).toMatch(WHEN);
    // the same plan in YAML
    const asYaml = await typed([
      'add-unit',
      'wordpress',
      '-n',
      '2',
      '--dry-run',
      '--format',
      'yaml',
    ]);
    expect(asYaml.code).toBe(0);
    const yamlPlan = (parse(asYaml.screen) as { plan: any }).plan;
    expect(yamlPlan.machines.map((m: any) => [m.id, m.units])).toEqual([
      [null, ['wordpress/0']],
      [null, ['wordpress/1']],
    ]);
    expect(yamlPlan.estimatedSeconds).toBeGreaterThan(0);

    // add-machine: two bare machines; and as JSON
    const machines = await typed(['add-machine', '-n', '2', '--dry-run']);
    expect(machines.code).toBe(0);
    expect(machines.screen).toMatch(HEADER);
    expect(newRows(machines.screen).map((r) => r[0])).toEqual(['-', '-']);
    expect(machines.screen).toMatch(TOTAL);
    expect(machines.screen).toMatch(WHEN);
    const asJson = await typed(['add-machine', '-n', '2', '--dry-run', '--format', 'json']);
    expect(asJson.code).toBe(0);
    const jsonPlan = JSON.parse(asJson.screen).plan;
    expect(jsonPlan.machines).toHaveLength(2);
    expect(jsonPlan.pricePerMonth).toBe(Math.round(jsonPlan.pricePerHour * 730 * 100) / 100);

    // nothing was created: the application has no unit and the model no machine
    const after = await status();
    expect(Object.keys(after.machines ?? {})).toEqual([]);
    expect(Object.keys(after.applications)).toEqual(['wordpress']);
    expect(after.applications.wordpress.units ?? {}).toEqual({});
  }, 600_000);
});
