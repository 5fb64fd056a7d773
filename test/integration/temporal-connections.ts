import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { StackInfo } from '../../local/stack-info';

/** A Temporal client and a worker's native connection to the test stack. */
export interface TemporalConnections {
  readonly client: Client;
  readonly native: NativeConnection;
}

/**
 * The connections an integration file that runs its own in-process worker
 * uses: opened before its tests (the worker's log kept to errors: the
 * failures these files inject are expected) and closed after them.
 */
export function temporalConnections(stack: StackInfo): TemporalConnections {
  let connection: Connection | undefined;
  let client: Client | undefined;
  let native: NativeConnection | undefined;
  beforeAll(async () => {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    connection = await Connection.connect({ address: stack.temporalAddress });
    client = new Client({ connection, namespace: stack.temporalNamespace });
    native = await NativeConnection.connect({ address: stack.temporalAddress });
  });
  afterAll(async () => {
    await native?.close();
    await connection?.close();
  });
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('Temporal connections are opened in beforeAll');
    return value;
  };
  return {
    get client() {
      return opened(client);
    },
    get native() {
      return opened(native);
    },
  };
}
