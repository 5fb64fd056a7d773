import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BUNDLING_STACKS, type CloudAssembly } from 'aws-cdk-lib/cx-api';
import { PROJECT_ROOT } from '../../../infra/bundling';
import { addProvisionerStack } from '../../../infra/provisioner-app';
import type { ProvisionerStack } from '../../../infra/provisioner-stack';

export interface Synthesized {
  stack: ProvisionerStack;
  template: Template;
  assembly: CloudAssembly;
  outdir: string;
  /** Removes the synthesized files. */
  cleanup(): void;
}

/** The feature flags `cdk.json` gives the CLI, so tests synthesize what `cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  return cdkJson.context ?? {};
}

/**
 * The account and region the CDK CLI hands the app (`CDK_DEFAULT_ACCOUNT`,
 * `CDK_DEFAULT_REGION`). Without credentials (a fresh clone, `cdk synth`)
 * the CLI passes its default region and no account; with credentials, both.
 * `agnostic` passes neither (an app run outside the CLI).
 */
export type CliEnvironment = { account?: string; region?: string };

/** What `npx cdk synth` passes on a machine with no AWS credentials or config. */
export const CLI_WITHOUT_CREDENTIALS: CliEnvironment = { region: 'us-east-1' };
export const CLI_WITH_CREDENTIALS: CliEnvironment = {
  account: '123456789012',
  region: 'eu-west-2',
};
export const ENVIRONMENT_AGNOSTIC: CliEnvironment = {};

function swapEnv(values: Record<string, string | undefined>): () => void {
  const previous = Object.fromEntries(Object.keys(values).map((k) => [k, process.env[k]]));
  const set = (entries: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(entries)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  set(values);
  return () => set(previous);
}

/**
 * Synthesizes one environment as `cdk synth -c env=<name>` does on a fresh
 * clone (by default: the CLI's region, no account), with any Docker binary
 * made unreachable: bundling must use local esbuild and the worker image
 * must only be staged, never built.
 */
export function synthEnvironment(
  env: string,
  context: Record<string, string> = {},
  cli: CliEnvironment = CLI_WITHOUT_CREDENTIALS,
  options: { bundle?: boolean } = {},
): Synthesized {
  const outdir = mkdtempSync(path.join(tmpdir(), `provisioner-cdk-${env}-`));
  const restore = swapEnv({
    CDK_DOCKER: path.join(outdir, 'no-docker-here'),
    CDK_DEFAULT_ACCOUNT: cli.account,
    CDK_DEFAULT_REGION: cli.region,
  });
  try {
    // `bundle: false` is the CLI's `--exclusively`-style skip: Lambda code becomes a
    // placeholder, for checks the code cannot change (cdk-nag reads only the template)
    const skipBundling = options.bundle === false ? { [BUNDLING_STACKS]: [] } : {};
    const app = new App({
      outdir,
      context: { ...cdkJsonContext(), ...skipBundling, ...context, env },
    });
    const stack = addProvisionerStack(app);
    // Synth prints its warnings (placeholder namespace, no alarm email) on stderr; tests check them.
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    let assembly: CloudAssembly;
    try {
      assembly = app.synth();
    } finally {
      quiet.mockRestore();
    }
    return {
      stack,
      template: Template.fromStack(stack),
      assembly,
      outdir,
      cleanup: () => rmSync(outdir, { recursive: true, force: true }),
    };
  } catch (err) {
    rmSync(outdir, { recursive: true, force: true });
    throw err;
  } finally {
    restore();
  }
}

export type Resource = {
  Type: string;
  Properties?: Record<string, unknown>;
  DependsOn?: string[];
} & Record<string, unknown>;

export function resourcesOfType(template: Template, type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

export interface PolicyStatementJson {
  Effect?: string;
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: unknown;
  NotResource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
  Sid?: string;
}

/** Every IAM statement in the template: policies, managed policies and roles' inline policies. */
export function allPolicyStatements(
  template: Template,
): Array<{ owner: string; statement: PolicyStatementJson }> {
  const out: Array<{ owner: string; statement: PolicyStatementJson }> = [];
  const add = (owner: string, document: unknown) => {
    const statements =
      (document as { Statement?: PolicyStatementJson[] } | undefined)?.Statement ?? [];
    for (const statement of statements) out.push({ owner, statement });
  };
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
    for (const [id, res] of Object.entries(resourcesOfType(template, type))) {
      add(id, res.Properties?.PolicyDocument);
    }
  }
  for (const [id, res] of Object.entries(resourcesOfType(template, 'AWS::IAM::Role'))) {
    const policies =
      (res.Properties?.Policies as Array<{ PolicyDocument: unknown }> | undefined) ?? [];
    for (const policy of policies) add(id, policy.PolicyDocument);
  }
  return out;
}

export function asList<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
