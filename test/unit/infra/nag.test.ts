import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { BUNDLING_STACKS } from 'aws-cdk-lib/cx-api';
import { PROJECT_ROOT } from '../../../infra/bundling';
import { ENVIRONMENT_NAMES } from '../../../infra/config';
import { addProvisionerStack } from '../../../infra/provisioner-app';
import {
  CLI_WITH_CREDENTIALS,
  CLI_WITHOUT_CREDENTIALS,
  ENVIRONMENT_AGNOSTIC,
  cdkJsonContext,
  synthEnvironment,
  type CliEnvironment,
} from './synth';

const PROD_CONTEXT = {
  temporalAddress: 'provisioner-prod.a1b2c.tmprl.cloud:7233',
  temporalNamespace: 'provisioner-prod.a1b2c',
  alarmEmail: 'oncall@example.org',
};

function acknowledgedRules(synth: ReturnType<typeof synthEnvironment>) {
  return synth.stack.node
    .findAll()
    .flatMap((c) => c.node.metadata)
    .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
    .flatMap((m) => Object.entries(m.data as Record<string, string>))
    .filter(([id]) => id.includes('AwsSolutions-'))
    .map(([id, reason]) => [id.replace(/^annotation::/i, ''), reason] as const);
}

/**
 * Every way the account and region reach the app. docs/deploy.md gives only
 * `-c env=…` (the docs' context for prod adds the Temporal endpoint and the
 * alarm email): on a fresh clone the CLI passes its default region and no
 * account; with credentials it passes both; outside the CLI, neither.
 */
const PATHS: Array<[string, string, CliEnvironment]> = [
  ...ENVIRONMENT_NAMES.map(
    (env) =>
      [env, 'the CLI without credentials', CLI_WITHOUT_CREDENTIALS] as [
        string,
        string,
        CliEnvironment,
      ],
  ),
  ['dev', 'the CLI with credentials', CLI_WITH_CREDENTIALS],
  ['dev', 'no CLI (environment-agnostic)', ENVIRONMENT_AGNOSTIC],
];

describe('AWS Solutions checks (cdk-nag)', () => {
  it.each(PATHS)(
    'pass for %s through %s: every finding is fixed or acknowledged with a reason',
    (env, _how, cli) => {
      // a finding nobody acknowledged throws here, naming the rule and the resource
      // bundles change no finding; the CLI test below bundles for real
      const synth = synthEnvironment(env, env === 'prod' ? PROD_CONTEXT : {}, cli, {
        bundle: false,
      });
      try {
        const acknowledged = acknowledgedRules(synth);
        expect(acknowledged.map(([id]) => id)).toEqual(
          expect.arrayContaining(['AwsSolutions-APIG4', 'AwsSolutions-SMG4', 'AwsSolutions-ECS2']),
        );
        // the worker's launch wildcards are acknowledged as this synth renders them
        const region = cli.region ?? '<AWS::Region>';
        const partition = cli.region ? 'aws' : '<AWS::Partition>';
        expect(acknowledged.map(([id]) => id)).toContain(
          `AwsSolutions-IAM5[Resource::arn:${partition}:ec2:${region}:<AWS::AccountId>:instance/*]`,
        );
        for (const [, reason] of acknowledged) {
          expect(reason.length).toBeGreaterThan(40); // a reason, not a placeholder
        }
      } finally {
        synth.cleanup();
      }
    },
  );

  it('fail the synth on a finding nobody acknowledged', () => {
    const app = new App({
      context: { ...cdkJsonContext(), [BUNDLING_STACKS]: [], env: 'dev' },
    });
    const stack = addProvisionerStack(app);
    new Secret(stack, 'Unrotated');
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      let message = '';
      try {
        app.synth();
      } catch (err) {
        message = String(err);
      }
      expect(message).toMatch(/AwsSolutions-SMG4/);
      expect(message).toContain('Unrotated');
    } finally {
      quiet.mockRestore();
    }
  });
});

/** The environment of a fresh clone: no AWS credentials, config, profile or CDK defaults. */
function freshCloneEnv(scratch: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AWS_|CDK_)/.test(key) && key !== 'AWS_CA_BUNDLE') continue;
    env[key] = value;
  }
  return {
    ...env,
    AWS_CONFIG_FILE: path.join(scratch, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: path.join(scratch, 'no-aws-credentials'),
    // no container engine: Lambdas bundle with local esbuild, the worker image is only staged
    CDK_DOCKER: path.join(scratch, 'no-docker-here'),
  };
}

describe('npx cdk synth -c env=dev (the CLI, as docs/deploy.md runs it)', () => {
  const CLI_BOUND_MS = 300_000;

  it(
    'exits 0 with no cdk-nag finding and writes the stack and its bundles',
    async () => {
      const scratch = mkdtempSync(path.join(tmpdir(), 'provisioner-cli-synth-'));
      const outdir = path.join(scratch, 'cdk.out');
      try {
        const { code, output } = await new Promise<{ code: number | null; output: string }>(
          (resolve) => {
            execFile(
              'npx',
              ['cdk', 'synth', '-c', 'env=dev', '-o', outdir, '-q'],
              {
                cwd: PROJECT_ROOT,
                env: freshCloneEnv(scratch),
                timeout: CLI_BOUND_MS - 20_000,
                maxBuffer: 64 * 1024 * 1024,
              },
              (err, stdout, stderr) => {
                const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
                resolve({ code, output: `${stdout}\n${stderr}` });
              },
            );
          },
        );
        expect({ code, nag: output.match(/AwsSolutions-\S+/g) ?? [] }).toEqual({
          code: 0,
          nag: [],
        });
        expect(output).not.toMatch(/Synthesis finished with errors/);
        const templateFile = path.join(outdir, 'Provisioner-dev.template.json');
        expect(existsSync(templateFile)).toBe(true);
        const template = JSON.parse(readFileSync(templateFile, 'utf8')) as {
          Resources: Record<
            string,
            { Type: string; Properties?: { Handler?: string }; Metadata?: Record<string, string> }
          >;
        };
        const functions = Object.values(template.Resources).filter(
          (r) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path'],
        );
        // the API groups, instance-events, the search-attribute handler and CDK's own
        expect(functions.length).toBeGreaterThanOrEqual(8);
        for (const fn of functions) {
          const file = `${fn.Properties!.Handler!.split('.')[0]!}.js`;
          expect(existsSync(path.join(outdir, fn.Metadata!['aws:asset:path']!, file))).toBe(true);
        }
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    },
    CLI_BOUND_MS,
  );
});
