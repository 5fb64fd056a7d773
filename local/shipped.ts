/**
 * The shipped artifacts (PROVISIONER_ARTIFACTS=shipped): what `cdk synth`
 * puts in `cdk.out` — each API Lambda's bundle, handler and environment as
 * the template sets them, the HTTP API's routes, and the worker image's
 * build context — read so the local stack can run those instead of the
 * TypeScript sources (README, "Sources or shipped artifacts").
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';

export const PROJECT_ROOT = resolve(__dirname, '..');

/** `sources` (default): the TypeScript through tsx. `shipped`: the bundles and worker build. */
export const ARTIFACTS_ENV = 'PROVISIONER_ARTIFACTS';
/** A `cdk.out` to use instead of synthesizing one (e.g. to run a hand-broken bundle). */
export const CDK_OUT_ENV = 'PROVISIONER_CDK_OUT';

export type Artifacts = 'sources' | 'shipped';

/** Where local/lambda-host.ts records the shape of each init and event (for tests). */
export const LAMBDA_EVENTS_FILE_ENV = 'PROVISIONER_LAMBDA_EVENTS_FILE';

export function artifactsFromEnv(env: NodeJS.ProcessEnv = process.env): Artifacts {
  const value = env[ARTIFACTS_ENV] ?? '';
  if (value === '' || value === 'sources') return 'sources';
  if (value === 'shipped') return 'shipped';
  throw new Error(`${ARTIFACTS_ENV}="${value}": expected sources or shipped`);
}

/** A template value: a literal, or an intrinsic (`Ref`, `Fn::GetAtt`, `Fn::Join`, …) resolved only at deploy. */
export type TemplateValue = string | number | boolean | Record<string, unknown> | unknown[];

export interface ShippedFunction {
  logicalId: string;
  /** `Stack/Api/ModelsHandler/Resource` → `Api/ModelsHandler`. */
  name: string;
  /** The asset directory in `cdk.out` (what CDK zips and uploads). */
  assetDir: string;
  /** `index.handler`, as the template sets it. */
  handler: string;
  runtime: string;
  timeoutSeconds: number;
  memoryMiB: number;
  environment: Record<string, TemplateValue>;
}

export interface ShippedRoute {
  /** `GET /v1/models/{model}` or `$default`. */
  routeKey: string;
  functionLogicalId: string;
}

export interface ShippedWorker {
  /** The Docker build context CDK staged (the repository minus .dockerignore). */
  contextDir: string;
  dockerFile: string;
  environment: Record<string, TemplateValue>;
  /** Variables ECS fills from secrets. */
  secrets: string[];
}

export interface ShippedAssembly {
  cdkOut: string;
  stackName: string;
  functions: Map<string, ShippedFunction>;
  routes: ShippedRoute[];
  worker: ShippedWorker;
}

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

function refOf(value: unknown): string | undefined {
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v.Ref === 'string') return v.Ref;
    const getAtt = v['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
    const join = v['Fn::Join'];
    if (Array.isArray(join) && Array.isArray(join[1])) {
      for (const part of join[1] as unknown[]) {
        const ref = refOf(part);
        if (ref) return ref;
      }
    }
  }
  return undefined;
}

/**
 * Reads a synthesized cloud assembly: the one stack's template and asset
 * manifest. Each Lambda's code is the asset its `Code.S3Key` names; each
 * route's function is the one its integration's URI points at.
 */
export function readShippedAssembly(cdkOut: string): ShippedAssembly {
  const manifest = readJson<{
    artifacts?: Record<string, { type: string; properties?: Record<string, unknown> }>;
  }>(join(cdkOut, 'manifest.json'));
  const artifacts = Object.entries(manifest.artifacts ?? {});
  const stacks = artifacts.filter(([, a]) => a.type === 'aws:cloudformation:stack');
  if (stacks.length !== 1) {
    throw new Error(`${cdkOut}: expected one stack in the cloud assembly, found ${stacks.length}`);
  }
  const [stackName, stackArtifact] = stacks[0]!;
  const template = readJson<{ Resources: Record<string, Resource> }>(
    join(cdkOut, String(stackArtifact.properties?.templateFile)),
  );
  const assetManifests = artifacts.filter(([, a]) => a.type === 'cdk:asset-manifest');
  const files: Record<string, { source: { path: string; packaging?: string } }> = {};
  const images: Record<string, { source: { directory: string; dockerFile?: string } }> = {};
  for (const [, a] of assetManifests) {
    const assets = readJson<{ files?: typeof files; dockerImages?: typeof images }>(
      join(cdkOut, String(a.properties?.file)),
    );
    Object.assign(files, assets.files ?? {});
    Object.assign(images, assets.dockerImages ?? {});
  }

  const functions = new Map<string, ShippedFunction>();
  for (const [id, res] of Object.entries(template.Resources)) {
    if (res.Type !== 'AWS::Lambda::Function') continue;
    const p = res.Properties ?? {};
    const key = (p.Code as { S3Key?: unknown } | undefined)?.S3Key;
    if (typeof key !== 'string') continue; // inline code (CDK's own providers): not ours
    const asset = files[key.replace(/\.zip$/, '')];
    if (!asset) throw new Error(`${stackName}: ${id}'s code ${key} is not in the asset manifest`);
    const pathMetadata = res.Metadata?.['aws:cdk:path'];
    const cdkPath = typeof pathMetadata === 'string' ? pathMetadata : id;
    functions.set(id, {
      logicalId: id,
      name: cdkPath.replace(/^[^/]+\//, '').replace(/\/Resource$/, ''),
      assetDir: join(cdkOut, asset.source.path),
      handler: String(p.Handler),
      runtime: String(p.Runtime),
      timeoutSeconds: Number(p.Timeout ?? 3),
      memoryMiB: Number(p.MemorySize ?? 128),
      environment:
        (p.Environment as { Variables?: Record<string, TemplateValue> } | undefined)?.Variables ??
        {},
    });
  }

  const routes: ShippedRoute[] = [];
  for (const res of Object.values(template.Resources)) {
    if (res.Type !== 'AWS::ApiGatewayV2::Route') continue;
    const integrationId = refOf(res.Properties?.Target);
    const integration = integrationId ? template.Resources[integrationId] : undefined;
    const functionId = refOf(integration?.Properties?.IntegrationUri);
    const format = integration?.Properties?.PayloadFormatVersion;
    if (!functionId || !functions.has(functionId)) {
      throw new Error(`route ${String(res.Properties?.RouteKey)}: no Lambda integration found`);
    }
    if (format !== '2.0') {
      throw new Error(
        `route ${String(res.Properties?.RouteKey)}: payload format ${String(format)}`,
      );
    }
    routes.push({ routeKey: String(res.Properties?.RouteKey), functionLogicalId: functionId });
  }

  const taskDefinitions = Object.values(template.Resources).filter(
    (r) => r.Type === 'AWS::ECS::TaskDefinition',
  );
  if (taskDefinitions.length !== 1) throw new Error(`${stackName}: expected one task definition`);
  const container = (
    taskDefinitions[0]!.Properties?.ContainerDefinitions as Array<Record<string, unknown>>
  )[0]!;
  const imageHash = JSON.stringify(container.Image).match(/:([0-9a-f]{64})"/)?.[1];
  const image = imageHash ? images[imageHash] : undefined;
  if (!image) throw new Error(`${stackName}: the worker's image is not in the asset manifest`);
  const worker: ShippedWorker = {
    contextDir: join(cdkOut, image.source.directory),
    dockerFile: image.source.dockerFile ?? 'Dockerfile',
    environment: Object.fromEntries(
      ((container.Environment as Array<{ Name: string; Value: TemplateValue }>) ?? []).map((e) => [
        e.Name,
        e.Value,
      ]),
    ),
    secrets: ((container.Secrets as Array<{ Name: string }>) ?? []).map((s) => s.Name),
  };
  return { cdkOut, stackName, functions, routes, worker };
}

/**
 * How a template's variables become the local stack's: `replace` gives the
 * local value of a variable whose cloud value means nothing here (a table's
 * `Ref`, the Temporal Cloud address); `unset` leaves out one with no local
 * counterpart, saying why; `add` sets what only the local stack needs (its
 * endpoints, as the sources path sets them). Any other intrinsic fails the
 * start, naming the variable: a new wiring in the template needs a local
 * decision here, never a silent default.
 */
export interface Substitutions {
  replace: Record<string, string>;
  unset: Record<string, string>;
  add: Record<string, string>;
}

export function localEnvironment(
  component: string,
  template: Record<string, TemplateValue>,
  subs: Substitutions,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(template)) {
    if (subs.unset[name] !== undefined) continue;
    const local = subs.replace[name];
    if (local !== undefined) out[name] = local;
    else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      out[name] = String(value);
    else {
      throw new Error(
        `${component}: the template sets ${name} to ${JSON.stringify(value)}, which has no local ` +
          'value (add it to the shipped substitutions in local/stack.ts)',
      );
    }
  }
  return { ...out, ...subs.add };
}

/** What a process of the shipped stack inherits from ours: enough to run `node`, nothing of the caller's settings. */
export function baseProcessEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name];
    if (value) out[name] = value;
  }
  return out;
}

/**
 * Runs `cdk synth` as the docs do (`-c env=dev`), into `outdir`: the
 * assembly the shipped stack runs. Takes a minute.
 */
export function synthesize(outdir: string, env = 'dev'): string {
  rmSync(outdir, { recursive: true, force: true });
  execFileSync(
    join(PROJECT_ROOT, 'node_modules', '.bin', 'cdk'),
    ['synth', '-c', `env=${env}`, '-o', outdir, '-q'],
    { cwd: PROJECT_ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: process.env },
  );
  return outdir;
}

/**
 * Builds the worker as its image does: copies the build context CDK staged,
 * gives it node_modules (the Dockerfile's `npm ci`: the same lockfile, here
 * the checkout's install), and runs the Dockerfile's build command,
 * scripts/build-worker.sh. Returns the directory to run
 * `node --enable-source-maps worker/main.js` in (the image's /app).
 */
export function buildWorker(worker: ShippedWorker, workDir: string): string {
  const dockerfile = readFileSync(join(worker.contextDir, worker.dockerFile), 'utf8');
  if (!/^RUN sh scripts\/build-worker\.sh \/out$/m.test(dockerfile)) {
    throw new Error(
      `${worker.dockerFile} no longer builds with scripts/build-worker.sh: the shipped stack cannot build what it builds`,
    );
  }
  const context = join(workDir, 'worker-context');
  const out = join(workDir, 'worker-app');
  rmSync(context, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
  cpSync(worker.contextDir, context, { recursive: true });
  const nodeModules = join(PROJECT_ROOT, 'node_modules');
  symlinkSync(nodeModules, join(context, 'node_modules'), 'dir');
  execFileSync('sh', ['scripts/build-worker.sh', out], {
    cwd: context,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  mkdirSync(out, { recursive: true });
  const pkg = JSON.parse(readFileSync(join(out, 'package.json'), 'utf8')) as PackageJson;
  const dev = devDependenciesReached(out, WORKER_ENTRIES, pkg);
  if (dev.length > 0) {
    throw new Error(
      `the worker imports ${dev.join(', ')}, only a devDependency: the image (npm ci --omit=dev) does not have it`,
    );
  }
  if (!existsSync(join(out, 'node_modules')))
    symlinkSync(nodeModules, join(out, 'node_modules'), 'dir');
  rmSync(context, { recursive: true, force: true });
  return out;
}

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** Where the worker's code starts: its CMD, and the workflows it hands Temporal's bundler. */
const WORKER_ENTRIES = ['worker/main.js', 'workflows/index.js'];

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/**
 * The devDependencies the built worker's code imports, following its imports
 * from `entries` (esbuild's metafile; packages are not entered): the checkout's
 * node_modules has them, the image (`npm ci --omit=dev`) does not, so the task
 * would crash-loop with MODULE_NOT_FOUND. A package's own dependencies are not
 * followed, and a require with a computed name is not seen.
 */
export function devDependenciesReached(
  appDir: string,
  entries: string[],
  pkg: PackageJson,
): string[] {
  const result = buildSync({
    entryPoints: entries.map((e) => join(appDir, e)),
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    outdir: join(appDir, '.deps-check'),
    logLevel: 'silent',
  });
  const reached = new Set<string>();
  for (const input of Object.values(result.metafile.inputs)) {
    for (const imp of input.imports) {
      if (imp.external && !isBuiltin(imp.path)) reached.add(packageOf(imp.path));
    }
  }
  return [...reached]
    .filter((name) => name in (pkg.devDependencies ?? {}) && !(name in (pkg.dependencies ?? {})))
    .sort();
}

/** The worker image's command (the Dockerfile's CMD), run in `buildWorker`'s directory. */
export const WORKER_COMMAND = ['--enable-source-maps', 'worker/main.js'];
