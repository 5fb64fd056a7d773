import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';

/**
 * Where the answer of a call whose response is to be lost goes
 * (`loseResponses`): the proxy carries the call out in full, writing its
 * answer here, then destroys the client's connection. It accepts what the
 * handlers use of a ServerResponse (writeHead, write/end, piping, destroy).
 */
export class DiscardedResponse extends Writable {
  headersSent = false;
  statusCode = 200;

  writeHead(status: number): this {
    this.statusCode = status;
    this.headersSent = true;
    return this;
  }

  override _write(_chunk: unknown, _encoding: BufferEncoding, callback: () => void): void {
    this.headersSent = true;
    callback();
  }

  asServerResponse(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}
