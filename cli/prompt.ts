import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

/** Asks one question on the terminal and returns the answer line. */
export async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    return await new Promise<string>((resolve) => rl.question(question, resolve));
  } finally {
    rl.close();
  }
}

/** Asks for a secret on the terminal without echoing what is typed. */
export async function askSecret(question: string): Promise<string> {
  process.stderr.write(question);
  let muted = true;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output: sink, terminal: true });
  try {
    const answer = await new Promise<string>((resolve) => rl.question('', resolve));
    muted = false;
    process.stderr.write('\n');
    return answer;
  } finally {
    rl.close();
  }
}

/** Everything on stdin (a pipe or a file), as text. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
