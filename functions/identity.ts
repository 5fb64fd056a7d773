import { EntityNotFoundError } from '../state/errors';
import { dynamoDbClient } from '../config/clients';
import { serviceEndpoints } from '../config/env';
import { identitySettings } from '../config/identity';
import {
  addUser,
  CognitoUserPool,
  listUsers,
  modelAccessList,
  removeUser,
  revokeModelAccess,
  setControllerAccess,
  setModelAccess,
  type IdentityContext,
} from '../service/identity';
import { AccessStore } from '../state/access';
import { AuditStore, type AuditQuery as AuditQueryInput } from '../state/audit';
import { Repository } from '../state/repository';
import { BadRequestError, NotFoundError } from './errors';
import { createHandler, groupOperations, param, parseBody, type ApiRequest } from './http';
import { LIMITS } from './limits';
import { AddUser, AllAuditQuery, AuditQuery, SetControllerAccess, SetModelAccess } from './schemas';

let context: (IdentityContext & { audit: AuditStore }) | undefined;

/** Built once per container: the table's stores and the pool's admin API. */
function identityContext(): IdentityContext & { audit: AuditStore } {
  if (context) return context;
  const settings = identitySettings();
  const endpoints = serviceEndpoints();
  const ddb = dynamoDbClient(endpoints);
  context = {
    settings,
    access: new AccessStore(ddb, endpoints.tableName),
    audit: new AuditStore(ddb, endpoints.tableName, settings.auditRetentionDays),
    repo: new Repository(ddb, endpoints.tableName),
    ...(settings.pool
      ? {
          pool: new CognitoUserPool(
            settings.pool.userPoolId,
            settings.region,
            settings.pool.endpoint,
          ),
        }
      : {}),
    now: () => new Date(),
  };
  return context;
}

function caller(req: ApiRequest) {
  if (!req.caller) throw new Error(`${req.routeKey}: no caller`); // the route table says a token is needed
  return req.caller;
}

/** The audit routes' query: `since` (RFC 3339, compared as UTC), `limit` 1..500, `cursor`. */
function auditQuery(req: ApiRequest, all: boolean): AuditQueryInput {
  const parsed = parseBody(all ? AllAuditQuery : AuditQuery, req.query, 'query parameter');
  const query: AuditQueryInput = { limit: parsed.limit ? Number(parsed.limit) : 100 };
  if (parsed.since) query.since = new Date(parsed.since).toISOString();
  if (parsed.cursor) query.cursor = parsed.cursor;
  if ('user' in parsed && typeof parsed.user === 'string') query.user = parsed.user;
  if (query.limit > LIMITS.auditPage) throw new BadRequestError('limit too large');
  return query;
}

export const handler = createHandler(
  groupOperations('identity', {
    'GET /v1/auth': () => {
      const { settings } = identityContext();
      if (!settings.pool) throw new NotFoundError('this deployment has no user pool');
      return Promise.resolve({
        status: 200,
        body: {
          region: settings.region,
          userPoolId: settings.pool.userPoolId,
          clientId: settings.pool.clientId,
          ...(settings.pool.endpoint ? { endpoint: settings.pool.endpoint } : {}),
        },
      });
    },
    'GET /v1/whoami': (req) => {
      const { user, access } = caller(req);
      return Promise.resolve({ status: 200, body: { user, access } });
    },
    'POST /v1/users': async (req) => {
      const { name, password } = parseBody(AddUser, req.body);
      return { status: 201, body: await addUser(identityContext(), name, password) };
    },
    'GET /v1/users': async () => ({
      status: 200,
      body: { users: await listUsers(identityContext()) },
    }),
    'DELETE /v1/users/{name}': async (req) => {
      await removeUser(identityContext(), param(req, 'name'));
      return { status: 204 };
    },
    'PUT /v1/access/{user}': async (req) => {
      const { access } = parseBody(SetControllerAccess, req.body);
      return {
        status: 200,
        body: await setControllerAccess(identityContext(), param(req, 'user'), access),
      };
    },
    'GET /v1/models/{model}/access': async (req) => ({
      status: 200,
      body: { users: await modelAccessList(identityContext(), param(req, 'model')) },
    }),
    'PUT /v1/models/{model}/access/{user}': async (req) => {
      const { access } = parseBody(SetModelAccess, req.body);
      return {
        status: 200,
        body: await setModelAccess(
          identityContext(),
          param(req, 'model'),
          param(req, 'user'),
          access,
        ),
      };
    },
    'DELETE /v1/models/{model}/access/{user}': async (req) => {
      await revokeModelAccess(identityContext(), param(req, 'model'), param(req, 'user'));
      return { status: 204 };
    },
    'GET /v1/models/{model}/audit': async (req) => {
      const ctx = identityContext();
      const name = param(req, 'model');
      const query = auditQuery(req, false);
      // entries of an earlier model of that name are not this model's (GET /v1/audit
      // has them); a model gone (only a superuser reaches it) shows all its name's
      const createdAt = await ctx.repo.getModel(name).then(
        (m) => m.createdAt,
        (err: unknown) => {
          if (err instanceof EntityNotFoundError) return undefined;
          throw err;
        },
      );
      if (createdAt !== undefined && (query.since === undefined || query.since < createdAt))
        query.since = createdAt;
      return { status: 200, body: await ctx.audit.modelEntries(name, query) };
    },
    'GET /v1/audit': async (req) => ({
      status: 200,
      body: await identityContext().audit.allEntries(auditQuery(req, true)),
    }),
  }),
);
