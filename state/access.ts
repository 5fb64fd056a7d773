import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import {
  isControllerAccess,
  isModelAccess,
  type ControllerAccess,
  type ModelAccess,
} from '../core/access';
import {
  EntityConflictError,
  EntityNotFoundError,
  retryOnConcurrentChange,
  ConcurrentChangeError,
} from './errors';
import { doublingPause } from './backoff';
import { batchGetAll } from './batch-get';
import { modelPk } from './keys';
import { documentClient, queryAll } from './table';

/**
 * Who may do what (API.md, "Identity, access and audit"), in the table beside
 * the models (layout in state/README.md):
 *
 * - a user: `USER#<name>` / `#USER` `{ name, access, sub?, removedAt? }`,
 *   listed through gsi1 `USERS` / `<name>`. A removed user's item stays as a
 *   tombstone (`removedAt`, no gsi1 keys) for a day past the longest token
 *   life, so a token issued before the removal is refused at once.
 * - a model's grants: one item `MODEL#<model>` / `#ACCESS` `{ users: { name:
 *   level }, version }`. One item, changed under its version, makes "the last
 *   admin cannot be removed" a check of one read, and concurrent grants and
 *   revokes on one model serialize (a loser reads again and retries). Its `#`
 *   key goes with the model when the model is removed (state/provisioning.ts).
 */
export const userPk = (name: string): string => `USER#${name}`;
export const USER_SK = '#USER';
export const USERS_INDEX_PK = 'USERS';
export const ACCESS_SK = '#ACCESS';

/** Cognito access tokens live at most a day; a tombstone outlives any token issued before it. */
const TOMBSTONE_SECONDS = 2 * 24 * 3600;

export interface UserRecord {
  name: string;
  access: ControllerAccess;
  /** The pool's `sub` of the user: a token of an earlier user of the same name is refused. */
  sub?: string;
  createdAt: string;
}

export type UserState =
  | { kind: 'unknown' }
  /** `finished`: the removal went through (the pool forgot the user); otherwise it was cut off. */
  | { kind: 'removed'; removedAt: string; finished: boolean }
  | { kind: 'user'; user: UserRecord };

export interface ModelGrants {
  users: Record<string, ModelAccess>;
  version: number;
}

/** The first grants of a new model, written with it: its creator is its admin. */
export function firstGrantsItem(model: string, creator: string): Record<string, unknown> {
  return {
    pk: modelPk(model),
    sk: ACCESS_SK,
    type: 'model-access',
    users: { [creator]: 'admin' },
    version: 1,
  };
}

export class AccessStore {
  readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
  ) {
    this.doc = documentClient(client);
  }

  // ---- users

  async getUser(name: string): Promise<UserState> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: userPk(name), sk: USER_SK },
        ConsistentRead: true,
      }),
    );
    const item = out.Item;
    if (!item) return { kind: 'unknown' };
    if (typeof item.removedAt === 'string')
      return {
        kind: 'removed',
        removedAt: item.removedAt,
        finished: typeof item.expiresAt === 'number',
      };
    return { kind: 'user', user: toUser(item) };
  }

  /**
   * Records a new user (a tombstone of an earlier one of that name is
   * replaced); a live user of that name is a conflict. With `replacing`, only
   * the state the caller read is replaced: `'nothing'`, no item at all; a
   * `removedAt`, that finished tombstone and no other (a removal written
   * since the read is never overwritten). Anything else is a conflict.
   */
  async createUser(
    user: UserRecord,
    options: { replacing?: 'nothing' | { removedAt: string } } = {},
  ): Promise<void> {
    const { replacing } = options;
    const condition =
      replacing === undefined
        ? { ConditionExpression: 'attribute_not_exists(pk) OR attribute_exists(removedAt)' }
        : replacing === 'nothing'
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : {
              ConditionExpression: 'removedAt = :seen AND attribute_exists(expiresAt)',
              ExpressionAttributeValues: { ':seen': replacing.removedAt },
            };
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: userPk(user.name),
            sk: USER_SK,
            type: 'user',
            gsi1pk: USERS_INDEX_PK,
            gsi1sk: user.name,
            ...user,
          },
          ...condition,
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException)
        throw new EntityConflictError(`user "${user.name}" already exists`);
      throw err;
    }
  }

  async listUsers(): Promise<UserRecord[]> {
    const items = await queryAll(this.doc, {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': USERS_INDEX_PK },
    });
    return items.filter((i) => typeof i.removedAt !== 'string').map(toUser);
  }

  /** Sets a user's controller access; a user the provisioner has no record of gets one. */
  async setControllerAccess(name: string, access: ControllerAccess, now: Date): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: userPk(name), sk: USER_SK },
          UpdateExpression:
            'SET #access = :access, #name = :name, #type = :type, gsi1pk = :index, gsi1sk = :name, createdAt = if_not_exists(createdAt, :now)',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(removedAt)',
          ExpressionAttributeNames: { '#access': 'access', '#name': 'name', '#type': 'type' },
          ExpressionAttributeValues: {
            ':access': access,
            ':name': name,
            ':type': 'user',
            ':index': USERS_INDEX_PK,
            ':now': now.toISOString(),
          },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException)
        throw new EntityNotFoundError(`user "${name}" not found`);
      throw err;
    }
  }

  /**
   * Replaces the user with a tombstone: from now on every token of theirs is
   * refused (functions/access.ts reads this item on every request). Without
   * `expires` the tombstone stays until a removal finishes (the pool has
   * forgotten the user); with it, it goes a day past the longest token life.
   */
  async removeUser(name: string, now: Date, options: { expires: boolean }): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: userPk(name),
          sk: USER_SK,
          type: 'user-removed',
          name,
          removedAt: now.toISOString(),
          ...(options.expires
            ? { expiresAt: Math.floor(now.getTime() / 1000) + TOMBSTONE_SECONDS }
            : {}),
        },
      }),
    );
  }

  // ---- model grants

  async modelGrants(model: string): Promise<ModelGrants> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: ACCESS_SK },
        ConsistentRead: true,
      }),
    );
    return toGrants(out.Item);
  }

  /** One user's level on a model; undefined: no access. */
  async modelAccess(model: string, user: string): Promise<ModelAccess | undefined> {
    return (await this.modelGrants(model)).users[user];
  }

  /** Grants on many models at once. */
  async grantsOf(models: readonly string[]): Promise<Map<string, ModelGrants>> {
    const result = new Map<string, ModelGrants>();
    const keys = models.map((m) => ({ pk: modelPk(m), sk: ACCESS_SK }));
    for (const item of await batchGetAll(this.doc, this.tableName, keys, {
      pause: doublingPause,
    })) {
      result.set(String(item.pk).slice('MODEL#'.length), toGrants(item));
    }
    return result;
  }

  /**
   * Sets (`level`) or removes (undefined) a user's access to a model, under
   * the grants item's version: a change that lost a race reads again and is
   * retried, never answered 409. Leaving the model with no admin is refused.
   * The model must exist (checked in the same transaction... by condition on
   * the model item).
   */
  async changeModelAccess(
    model: string,
    user: string,
    level: ModelAccess | undefined,
    options: { userMustExist?: boolean } = {},
  ): Promise<void> {
    await retryOnConcurrentChange(async () => {
      const grants = await this.modelGrants(model);
      const users = { ...grants.users };
      if (level === undefined) delete users[user];
      else users[user] = level;
      const hadAdmin = Object.values(grants.users).includes('admin');
      if (hadAdmin && !Object.values(users).includes('admin')) {
        throw new EntityConflictError(`cannot remove the last admin of model "${model}"`);
      }
      const userMustExist = level !== undefined && options.userMustExist;
      // the user is live when the grant is written: a removal that dropped
      // their grants meanwhile is not undone by a grant read before it
      const written = await this.writeGrants(
        model,
        grants.version,
        users,
        userMustExist
          ? { user, condition: 'attribute_exists(pk) AND attribute_not_exists(removedAt)' }
          : undefined,
      );
      if (!written) throw new EntityNotFoundError(`user "${user}" not found`);
    });
  }

  /**
   * Drops every grant of a removed user, model by model (an admin-only, rare
   * walk). With `whileRemovedAt`, each drop is written only while the user's
   * item is still that tombstone (checked in the same transaction): once a
   * new user of the name is recorded, their grants are theirs, and the walk
   * stops and resolves to `false`. Otherwise it resolves to `true`.
   */
  async dropGrantsOf(
    user: string,
    models: readonly string[],
    options: { whileRemovedAt?: string } = {},
  ): Promise<boolean> {
    const grants = await this.grantsOf(models);
    for (const [model, g] of grants) {
      if (g.users[user] === undefined) continue;
      const dropped = await retryOnConcurrentChange(async () => {
        const current = await this.modelGrants(model);
        if (current.users[user] === undefined) return true;
        const users = { ...current.users };
        delete users[user];
        return this.writeGrants(
          model,
          current.version,
          users,
          options.whileRemovedAt === undefined
            ? undefined
            : {
                user,
                condition: 'removedAt = :seen',
                values: { ':seen': options.whileRemovedAt },
              },
        );
      });
      if (!dropped) return false;
    }
    return true;
  }

  /**
   * Writes a model's grants under the version they were read at (a lost race
   * throws ConcurrentChangeError, which the callers retry). With `userCheck`,
   * the user's item must meet its condition in the same transaction; resolves
   * to false when it does not (nothing written).
   */
  private async writeGrants(
    model: string,
    readVersion: number,
    users: Record<string, ModelAccess>,
    userCheck?: { user: string; condition: string; values?: Record<string, unknown> },
  ): Promise<boolean> {
    const put = {
      TableName: this.tableName,
      Item: {
        pk: modelPk(model),
        sk: ACCESS_SK,
        type: 'model-access',
        users,
        version: readVersion + 1,
      },
      ConditionExpression: readVersion === 0 ? 'attribute_not_exists(pk)' : 'version = :version',
      ...(readVersion === 0 ? {} : { ExpressionAttributeValues: { ':version': readVersion } }),
    };
    if (userCheck === undefined) {
      try {
        await this.doc.send(new PutCommand(put));
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException)
          throw new ConcurrentChangeError('model grants changed meanwhile');
        throw err;
      }
      return true;
    }
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: { pk: userPk(userCheck.user), sk: USER_SK },
                ConditionExpression: userCheck.condition,
                ...(userCheck.values ? { ExpressionAttributeValues: userCheck.values } : {}),
              },
            },
            { Put: put },
          ],
        }),
      );
    } catch (err) {
      if (err instanceof TransactionCanceledException) {
        const [userFailed] = err.CancellationReasons ?? [];
        if (userFailed?.Code === 'ConditionalCheckFailed') return false;
        throw new ConcurrentChangeError('model grants changed meanwhile');
      }
      throw err;
    }
    return true;
  }

  /** Removes a model's grants item (only when the model itself is gone). */
  async deleteGrants(model: string): Promise<void> {
    await this.doc.send(
      new DeleteCommand({ TableName: this.tableName, Key: { pk: modelPk(model), sk: ACCESS_SK } }),
    );
  }
}

function toUser(item: Record<string, unknown>): UserRecord {
  const access = item.access;
  return {
    name: String(item.name),
    access: isControllerAccess(access) ? access : 'login',
    ...(typeof item.sub === 'string' ? { sub: item.sub } : {}),
    createdAt: typeof item.createdAt === 'string' ? item.createdAt : '',
  };
}

function toGrants(item: Record<string, unknown> | undefined): ModelGrants {
  if (!item) return { users: {}, version: 0 };
  const users: Record<string, ModelAccess> = {};
  for (const [name, level] of Object.entries((item.users ?? {}) as Record<string, unknown>)) {
    if (isModelAccess(level)) users[name] = level;
  }
  return { users, version: Number(item.version ?? 0) };
}
