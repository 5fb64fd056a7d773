import { createServer, type Server } from 'node:net';
import {
  assertPortFree,
  freePort,
  PortInUseError,
  spawnManaged,
  tcpReachable,
  waitUntilHealthy,
} from '../../../local/processes';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('ports', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    server = createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('names the port and the variable that moves it when the port is taken', async () => {
    await expect(assertPortFree(port, 'API', 'PROVISIONER_API_PORT')).rejects.toThrow(
      new PortInUseError(
        `port ${port} (API) is already in use on 127.0.0.1; set PROVISIONER_API_PORT to use another port`,
      ),
    );
    expect(await tcpReachable(port)).toBe(true);
  });

  it('accepts a free port', async () => {
    const free = await freePort();
    await expect(assertPortFree(free, 'API')).resolves.toBeUndefined();
    expect(await tcpReachable(free)).toBe(false);
  });
});

describe('managed processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'procs-'));

  it('stops a process group, children included', async () => {
    const proc = spawnManaged('sleeper', 'sh', ['-c', 'sleep 30 & sleep 30'], {
      logFile: join(dir, 'sleeper.log'),
    });
    await new Promise((r) => setTimeout(r, 100));
    await proc.stop(2000);
    expect(await proc.exited).toBe('SIGTERM');
    // the whole group is gone (orphans are reaped by init, so give it a moment)
    const groupAlive = () => {
      try {
        process.kill(-proc.child.pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 40 && groupAlive(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(groupAlive()).toBe(false);
  });

  it('reports a process that dies before it is healthy, with its log', async () => {
    const proc = spawnManaged('failing', 'sh', ['-c', 'echo cannot bind >&2; exit 3'], {
      logFile: join(dir, 'failing.log'),
    });
    await expect(
      waitUntilHealthy(proc, 'failing service', () => Promise.resolve(false), 5000),
    ).rejects.toThrow(
      /failing service exited \(3\) before it was ready; its log .*failing\.log ends:\ncannot bind/,
    );
  });
});
