import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  configDir,
  currentModel,
  findStackFile,
  resolveEndpoint,
  saveLogin,
  selectModel,
  setCurrentModel,
} from '../../../cli/config';
import { colourEnabled } from '../../../cli/colour';
import { formatDuration, parseDuration } from '../../../cli/duration';

function tree() {
  const root = mkdtempSync(join(tmpdir(), 'cli-config-'));
  const deep = join(root, 'a', 'b', 'c');
  mkdirSync(deep, { recursive: true });
  return { root, deep, config: join(root, 'config') };
}

function writeStack(dir: string, info: object) {
  mkdirSync(join(dir, '.provisioner'), { recursive: true });
  writeFileSync(join(dir, '.provisioner', 'stack.json'), JSON.stringify(info));
}

describe('where the CLI talks to', () => {
  it('finds .provisioner/stack.json by walking up from the working directory', () => {
    const t = tree();
    writeStack(join(t.root, 'a'), { apiUrl: 'http://127.0.0.1:3000/', token: 'tok-stack' });
    expect(findStackFile(t.deep)).toBe(join(t.root, 'a', '.provisioner', 'stack.json'));
    expect(resolveEndpoint(t.deep, { PROVISIONER_CONFIG_DIR: t.config })).toEqual({
      apiUrl: 'http://127.0.0.1:3000',
      token: 'tok-stack',
      source: 'stack',
      file: join(t.root, 'a', '.provisioner', 'stack.json'),
    });
  });

  it('the stack file comes first, then PROVISIONER_API_URL and _TOKEN, then the stored login', () => {
    const t = tree();
    const env = {
      PROVISIONER_CONFIG_DIR: t.config,
      PROVISIONER_API_URL: 'https://api.example.com/',
      PROVISIONER_API_TOKEN: 'tok-env',
    };
    saveLogin('https://login.example.com', 'tok-login', env);
    expect(resolveEndpoint(t.deep, env)).toMatchObject({
      apiUrl: 'https://api.example.com',
      source: 'env',
    });
    expect(resolveEndpoint(t.deep, { PROVISIONER_CONFIG_DIR: t.config })).toMatchObject({
      apiUrl: 'https://login.example.com',
      token: 'tok-login',
      source: 'login',
    });
    writeStack(t.deep, { apiUrl: 'http://127.0.0.1:3000', token: 'tok-stack' });
    expect(resolveEndpoint(t.deep, env)).toMatchObject({ source: 'stack', token: 'tok-stack' });
  });

  it('nothing configured: one line saying the three ways', () => {
    const t = tree();
    expect(() => resolveEndpoint(t.deep, { PROVISIONER_CONFIG_DIR: t.config })).toThrow(
      'no provisioner API to talk to: run "npm start" in the checkout, set PROVISIONER_API_URL and PROVISIONER_API_TOKEN, or run "provisioner login <url>"',
    );
  });

  it('a URL without a token, or a stack file without one, is an error that names no secret', () => {
    const t = tree();
    expect(() =>
      resolveEndpoint(t.deep, {
        PROVISIONER_CONFIG_DIR: t.config,
        PROVISIONER_API_URL: 'http://x',
      }),
    ).toThrow('PROVISIONER_API_URL is set but PROVISIONER_API_TOKEN is not');
    writeStack(t.deep, { apiUrl: 'http://127.0.0.1:3000' });
    expect(() => resolveEndpoint(t.deep, {})).toThrow(/stack\.json has no apiUrl and token$/);
  });

  it('login stores the token readable by its owner only (0600, directory 0700)', () => {
    const t = tree();
    const file = saveLogin('https://api.example.com/', 'tok', { PROVISIONER_CONFIG_DIR: t.config });
    expect(file).toBe(join(t.config, 'credentials.json'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(t.config).mode & 0o777).toBe(0o700);
    // replacing it keeps the mode
    saveLogin('https://api.example.com/', 'tok2', { PROVISIONER_CONFIG_DIR: t.config });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('config directory: PROVISIONER_CONFIG_DIR, else XDG_CONFIG_HOME/provisioner', () => {
    expect(configDir({ PROVISIONER_CONFIG_DIR: '/x' })).toBe('/x');
    expect(configDir({ XDG_CONFIG_HOME: '/home/u/.cfg' })).toBe('/home/u/.cfg/provisioner');
  });
});

describe('the current model', () => {
  it('is remembered per API, like juju switch per controller', () => {
    const env = { PROVISIONER_CONFIG_DIR: tree().config };
    expect(currentModel('http://a', env)).toBeUndefined();
    setCurrentModel('http://a', 'one', env);
    setCurrentModel('http://b', 'two', env);
    expect(currentModel('http://a', env)).toBe('one');
    expect(currentModel('http://b', env)).toBe('two');
    setCurrentModel('http://a', undefined, env);
    expect(currentModel('http://a', env)).toBeUndefined();
  });

  it('-m wins over PROVISIONER_MODEL, which wins over the current model', () => {
    const env: Record<string, string> = { PROVISIONER_CONFIG_DIR: tree().config };
    setCurrentModel('http://a', 'current', env);
    expect(selectModel(undefined, 'http://a', env)).toBe('current');
    env.PROVISIONER_MODEL = 'from-env';
    expect(selectModel(undefined, 'http://a', env)).toBe('from-env');
    expect(selectModel('flag', 'http://a', env)).toBe('flag');
  });
});

describe('colour', () => {
  it.each([
    [{ isTTY: true }, {}, true],
    [{ isTTY: false }, {}, false],
    [{}, {}, false],
    [{ isTTY: true }, { NO_COLOR: '1' }, false],
    [{ isTTY: true }, { NO_COLOR: '' }, true],
    [{ isTTY: true }, { TERM: 'dumb' }, false],
    [{ isTTY: false }, { FORCE_COLOR: '1' }, true],
    [{ isTTY: true }, { NO_COLOR: '1', FORCE_COLOR: '1' }, false],
  ])('stream %j with env %j → %s', (stream, env, expected) => {
    expect(colourEnabled(stream, env)).toBe(expected);
  });
});

describe('durations', () => {
  it.each([
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['45', 45_000],
    ['1.5s', 1500],
  ])('%s = %d ms', (text, ms) => {
    expect(parseDuration(text, '--timeout')).toBe(ms);
  });

  it.each(['', 'soon', '5x', '5m junk', '-1s'])('"%s" is refused naming the flag', (text) => {
    expect(() => parseDuration(text, '--timeout')).toThrow(
      `invalid value "${text}" for option --timeout: expected a duration like 90s or 5m`,
    );
  });

  it('formats back', () => {
    expect([500, 45_000, 90_000, 3_723_000].map(formatDuration)).toEqual([
      '500ms',
      '45s',
      '1m30s',
      '1h2m3s',
    ]);
  });
});
