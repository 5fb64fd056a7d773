import { z } from 'zod';

/**
 * The admin API's request bodies are checked with zod; a body it refuses is
 * answered 400 `bad-request` with the first problem's message (each schema
 * names its own, in the words the tests pin). Where one check must come
 * before another (an unknown field before a bad value, as the hand-written
 * checks had it), the schemas are piped: the second runs only once the first
 * passed.
 */

/** A request body the admin API refuses (answered 400 `bad-request`). */
export class AdminBadRequestError extends Error {
  override readonly name = 'AdminBadRequestError';
}

/** `body` as `schema` reads it, or AdminBadRequestError with the first problem's message. */
export function parseAdminBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new AdminBadRequestError(parsed.error.issues[0]?.message ?? 'the body is not valid');
}

/** The key an issue is about (an entry of a record, an element of an array). */
export function issueKey(iss: { path?: PropertyKey[] | undefined }): string {
  return String(iss.path?.at(-1) ?? '');
}

/** An object with only `fields`, any value (checked by the schema piped after it). */
export function onlyFields(
  fields: readonly string[],
  messages: {
    notObject: string;
    unknown: (key: string) => string;
  },
) {
  return z.strictObject(Object.fromEntries(fields.map((f) => [f, z.unknown().optional()])), {
    error: (iss) =>
      iss.code === 'unrecognized_keys' ? messages.unknown(String(iss.keys[0])) : messages.notObject,
  });
}

/**
 * A record keyed by `key`, each value `value`. zod's record skips an own
 * `__proto__` key (JSON.parse makes one) without checking it, so a body such
 * as `{"__proto__": …}` would be accepted and set nothing; the hand-written
 * checks refused it as a bad key, and so does this, unless an entry before it
 * is already refused (the record names that one, as the entries were always
 * checked in order).
 */
export function keyedRecord<K extends z.ZodType<string>, V extends z.ZodType>(
  key: K,
  value: V,
  messages: { badKey: (key: string) => string; notObject: string },
) {
  return z
    .unknown()
    .superRefine((input, ctx) => {
      if (typeof input !== 'object' || input === null || Array.isArray(input)) return;
      for (const [k, v] of Object.entries(input)) {
        if (k === '__proto__') {
          ctx.addIssue({ code: 'custom', message: messages.badKey(k), input: k });
          return;
        }
        if (!key.safeParse(k).success || !value.safeParse(v).success) return;
      }
    })
    .pipe(
      z.record(key, value, {
        error: (iss) =>
          iss.code === 'invalid_key' ? messages.badKey(inputText(iss.input)) : messages.notObject,
      }),
    );
}

const ACTION_KEY = /^[a-z][A-Za-z0-9]*$/;

/** Lower-camel action name (`runInstances`) → upper-camel (`RunInstances`). */
export function actionOfKey(key: string): string {
  return key.charAt(0).toUpperCase() + key.slice(1);
}

/** Whether `key` is a lower-camel name of an EC2 action `isKnownAction` knows. */
export function isActionKey(key: string, isKnownAction: (action: string) => boolean): boolean {
  return ACTION_KEY.test(key) && isKnownAction(actionOfKey(key));
}

/** The text of what an issue refused: a key or a string as it was, anything else as JSON. */
export function inputText(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input);
}
