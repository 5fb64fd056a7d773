import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './limits';
import { systemClock } from './limits';
import { ProxyHandler, type Launch } from './pipeline';
import { Upstream } from './upstream';

export interface Ec2ProxyOptions {
  /** moto's base URL, e.g. `http://127.0.0.1:5001`. */
  readonly upstream: string;
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Time source for the limits' token buckets (tests). */
  readonly clock?: Clock;
}

export interface Ec2Proxy {
  /** `http://host:port`, the endpoint EC2 clients use. */
  readonly url: string;
  readonly port: number;
  /** The instances launched through it, and when each reports `running` (on `now()`'s clock). */
  launches(): Launch[];
  /** The proxy's own clock (ms): the time base of each launch's `runningAt`. */
  now(): number;
  close(): Promise<void>;
}

/** The proxy could not listen (port taken, bad host…); `code` is Node's (`EADDRINUSE`…). */
export class Ec2ProxyListenError extends Error {
  override readonly name = 'Ec2ProxyListenError';
  constructor(
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
    cause: Error,
  ) {
    super(
      code === 'EADDRINUSE'
        ? `EC2 proxy: port ${port} on ${host} is already in use`
        : `EC2 proxy: cannot listen on ${host}:${port}: ${cause.message}`,
      { cause },
    );
  }
}

export async function startEc2Proxy(opts: Ec2ProxyOptions): Promise<Ec2Proxy> {
  const host = opts.host ?? '127.0.0.1';
  const clock = opts.clock ?? systemClock;
  const proxy = new ProxyHandler(new Upstream(opts.upstream), clock);
  const server = http.createServer((req, res) => {
    proxy.handle(req, res).catch((err: unknown) => proxy.fail(res, err));
  });
  await listen(server, host, opts.port);
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    launches: () => proxy.launches(),
    now: () => clock(),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      proxy.close();
    },
  };
}

function listen(server: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void =>
      reject(new Ec2ProxyListenError(host, port, err.code, err));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
