import net from 'node:net';

/**
 * A TCP forwarder on 127.0.0.1 (a free port) in front of one upstream, that
 * a test can take down and bring back: down, every open connection is cut
 * and new ones are closed as soon as they are accepted, as a service that
 * went away looks to its clients; up, connections are piped to the upstream
 * again. For a process pointed at it (e.g. an API server's TEMPORAL_ADDRESS)
 * while everything else talks to the upstream directly.
 */
export interface TcpFaultProxy {
  /** `127.0.0.1:<port>`. */
  address: string;
  down(): void;
  up(): void;
  /** Connections refused while down. */
  refused(): number;
  close(): Promise<void>;
}

export async function startTcpFaultProxy(upstream: string): Promise<TcpFaultProxy> {
  const [host, portText] = upstream.split(':');
  const port = Number(portText);
  if (!host || !Number.isInteger(port)) throw new Error(`upstream "${upstream}" is not host:port`);
  let isDown = false;
  let refused = 0;
  const open = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  };
  const server = net.createServer((client) => {
    if (isDown) {
      refused += 1;
      client.destroy();
      return;
    }
    const target = net.connect({ host, port });
    track(client);
    track(target);
    client.on('error', () => target.destroy());
    target.on('error', () => client.destroy());
    client.pipe(target);
    target.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${own}`,
    down: () => {
      isDown = true;
      for (const socket of open) socket.destroy();
    },
    up: () => {
      isDown = false;
    },
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
