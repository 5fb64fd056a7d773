import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
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
 * Synthesizes one environment as `cdk synth -c env=<name>` would, with any
 * Docker binary made unreachable: bundling must use local esbuild and the
 * worker image must only be staged, never built.
 */
export function synthEnvironment(env: string, context: Record<string, string> = {}): Synthesized {
  const outdir = mkdtempSync(path.join(tmpdir(), `provisioner-cdk-${env}-`));
  const previousDocker = process.env.CDK_DOCKER;
  process.env.CDK_DOCKER = path.join(outdir, 'no-docker-here');
  try {
    const app = new App({ outdir, context: { ...cdkJsonContext(), ...context, env } });
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
    if (previousDocker === undefined) delete process.env.CDK_DOCKER;
    else process.env.CDK_DOCKER = previousDocker;
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
