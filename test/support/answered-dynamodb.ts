import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

/** A command a client sent: its name (`PutItemCommand`) and its input. */
export interface SentCommand {
  command: string;
  input: Record<string, unknown>;
}

/**
 * A DynamoDB client (us-east-1, test credentials, with `config` over them)
 * whose commands never leave the process: each is kept in `sent`, in order,
 * and answered by `answer`, with the command's output or a rejection (plain
 * values: answered before the document client's marshalling).
 */
export function answeredDynamoDb(
  answer: (sent: SentCommand) => Record<string, unknown> | Promise<Record<string, unknown>>,
  config: DynamoDBClientConfig = {},
): { client: DynamoDBClient; sent: SentCommand[] } {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    ...config,
  });
  const sent: SentCommand[] = [];
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const s = {
        command: String(context.commandName),
        input: (args as unknown as { input: Record<string, unknown> }).input,
      };
      sent.push(s);
      const output = await answer(s);
      return { output: { $metadata: {}, ...output }, response: {} };
    },
    { step: 'initialize', name: 'answeredInProcess' },
  );
  return { client, sent };
}
