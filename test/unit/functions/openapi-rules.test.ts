import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { z } from 'zod';
import { parseBody } from '../../../functions/http';
import { buildOpenApiDocument } from '../../../functions/openapi-document';
import { AddMachines, AddUser, CreateModel, Deploy, Relate } from '../../../functions/schemas';

/**
 * Issue 29: the OpenAPI document states the rules the server applies to a
 * request body, so what the document calls valid the server accepts and what
 * the server refuses the document calls invalid (client generators and
 * fuzzers see the real rules). Each of the loose examples is held to
 * both: the document's schema (JSON Schema 2020-12, as a fuzzer reads it) and
 * the server's parse of the same body.
 */
const document = buildOpenApiDocument('test') as unknown as {
  components: { schemas: Record<string, unknown> };
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...document, $id: 'urn:provisioner:openapi' });
const bodySchema = (name: string) =>
  ajv.compile({ $ref: `urn:provisioner:openapi#/components/schemas/${name}` });

const CASES: Array<{
  what: string;
  schema: z.ZodType;
  id: string;
  body: unknown;
  code: string;
  message: string;
}> = [
  {
    what: 'an empty model name',
    schema: CreateModel,
    id: 'CreateModelRequest',
    body: { name: '' },
    code: 'bad-request',
    message: 'invalid model name ""',
  },
  {
    what: 'an empty region',
    schema: CreateModel,
    id: 'CreateModelRequest',
    body: { name: 'demo', region: '' },
    code: 'bad-request',
    message: 'invalid region ""',
  },
  {
    what: 'an empty application name',
    schema: Deploy,
    id: 'DeployRequest',
    body: { name: '', base: 'ubuntu@22.04' },
    code: 'bad-request',
    message: 'invalid application name ""',
  },
  {
    what: 'an upper-case user name',
    schema: AddUser,
    id: 'AddUserRequest',
    body: { name: 'Bob', password: 'secret-1' },
    code: 'bad-request',
    message: 'invalid user name "Bob"',
  },
  {
    what: 'an empty base',
    schema: Deploy,
    id: 'DeployRequest',
    body: { name: 'wordpress', base: '' },
    code: 'bad-request',
    message: "expected base string to contain os and channel separated by '@'",
  },
  {
    what: 'a base of an unknown OS',
    schema: AddMachines,
    id: 'AddMachinesRequest',
    body: { base: 'foo@1' },
    code: 'bad-request',
    message: 'parsing base "foo@1": unknown os type "foo" not valid',
  },
  {
    what: 'no endpoints',
    schema: Relate,
    id: 'RelateRequest',
    body: { endpoints: [] },
    code: 'bad-request',
    message: 'a relation needs exactly two endpoints, got 0',
  },
  {
    what: 'one endpoint',
    schema: Relate,
    id: 'RelateRequest',
    body: { endpoints: ['wordpress'] },
    code: 'bad-request',
    message: 'a relation needs exactly two endpoints, got 1',
  },
  {
    what: 'an endpoint that names no application',
    schema: Relate,
    id: 'RelateRequest',
    body: { endpoints: ['wordpress', ':db'] },
    code: 'bad-request',
    message: 'invalid application name ""',
  },
  {
    what: 'a control character in constraints',
    schema: AddMachines,
    id: 'AddMachinesRequest',
    body: { constraints: 'tags=a\u0001b' },
    code: 'bad-request',
    message: 'field "constraints": must not contain control characters',
  },
  {
    what: 'a newline in a model’s constraints',
    schema: CreateModel,
    id: 'CreateModelRequest',
    body: { name: 'demo', constraints: 'mem=2G\ncores=2' },
    code: 'invalid-constraints',
    message: 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    what: 'a control character in a placement',
    schema: AddMachines,
    id: 'AddMachinesRequest',
    body: { placement: 'zone=us-east-1a\u0000' },
    code: 'bad-request',
    message: 'field "placement": must not contain control characters',
  },
];

describe('the OpenAPI document refuses what the server refuses (issue 29)', () => {
  it.each(CASES)('$what: invalid in the document, 400 $code from the server', (c) => {
    const validate = bodySchema(c.id);
    expect(validate(c.body)).toBe(false);
    let refused: { status?: number; code?: string; message?: string } | undefined;
    try {
      parseBody(c.schema, c.body);
    } catch (err) {
      refused = err as typeof refused;
    }
    expect({
      status: refused?.status,
      code: refused?.code,
      message: refused?.message,
    }).toEqual({ status: 400, code: c.code, message: c.message });
  });

  it.each<[string, z.ZodType, unknown]>([
    [
      'CreateModelRequest',
      CreateModel,
      // the document's constraints pattern takes keys in any order, as API.md writes them
      // (functions/grammar.ts), and sizes as large as the server answers them
      { name: 'demo', region: 'eu-west-1', constraints: 'mem=2G cores=2' },
    ],
    [
      'CreateModelRequest',
      CreateModel,
      { name: 'demo', region: 'eu-west-1', constraints: 'root-disk=3072000M mem=1048576M' },
    ],
    ['DeployRequest', Deploy, { name: 'wordpress', base: 'ubuntu@22.04/stable', numUnits: 0 }],
    ['DeployRequest', Deploy, { name: 'web', base: 'Ubuntu@24.04', to: ['zone=us-east-1a'] }],
    ['AddMachinesRequest', AddMachines, { base: 'centos@7', placement: 'lxd:0', count: 1 }],
    ['RelateRequest', Relate, { endpoints: ['wordpress:db', 'mysql'] }],
  ])('%s (case %#): valid in the document and accepted by the server', (id, schema, body) => {
    expect(bodySchema(id)(body)).toBe(true);
    expect(parseBody(schema, body)).toEqual(body);
  });
});
