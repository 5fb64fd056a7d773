import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { matchRoute } from '../../functions/routes';

/** The parts of an OpenAPI 3.1 document this check reads. */
export interface OpenApiDocumentLike {
  openapi: string;
  paths?: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }>
  >;
  components?: { schemas?: Record<string, unknown> };
}

export interface ResponseToCheck {
  method: string;
  /** The request's path, with its query string if any. */
  path: string;
  status: number;
  /** The parsed JSON body; undefined when the response had none. */
  body: unknown;
}

const DOCUMENT_ID = 'urn:provisioner:openapi';
const pointer = (...parts: string[]) =>
  parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * Holds responses to an OpenAPI document: the operation is found with the
 * route table the servers use; the status must be one it documents; the body
 * must match that response's schema (JSON Schema 2020-12, as OpenAPI 3.1
 * has it), or be empty when the response has no content. A request that
 * matches no route may only answer 401, 404 or 405, in the contract's error
 * shape.
 */
export function responseValidator(document: OpenApiDocumentLike) {
  // OpenAPI keywords (`example`, `id`) are annotations, not schema errors
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  const compiled = new Map<string, ValidateFunction>();
  const schemaAt = (ref: string): ValidateFunction => {
    let validate = compiled.get(ref);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${ref}` });
      compiled.set(ref, validate);
    }
    return validate;
  };

  /** What is wrong with the response, or an empty list. */
  return function problems(response: ResponseToCheck): string[] {
    const { method, status, body } = response;
    const pathname = new URL(response.path, 'http://localhost').pathname;
    const label = `${method} ${pathname} → ${status}`;
    const match = matchRoute(method, pathname);
    if (!match) {
      // 405: the path is the table's, the method is not (it names the ones it has in `Allow`)
      if (status !== 401 && status !== 404 && status !== 405)
        return [`${label}: a request that matches no route answered neither 401, 404 nor 405`];
      return errorsOf(label, schemaAt(pointer('components', 'schemas', 'Error')), body);
    }
    const operation = document.paths?.[match.route.path]?.[method.toLowerCase()];
    if (!operation) return [`${label}: ${method} ${match.route.path} is not in the document`];
    const answer = operation.responses?.[String(status)];
    if (!answer) {
      const documented = Object.keys(operation.responses ?? {}).join(', ');
      return [
        `${label}: status ${status} is not documented for ${method} ${match.route.path} (documented: ${documented}); body ${JSON.stringify(body)}`,
      ];
    }
    if (!answer.content?.['application/json']) {
      return body === undefined ? [] : [`${label}: documented without a body, answered one`];
    }
    const ref = pointer(
      'paths',
      match.route.path,
      method.toLowerCase(),
      'responses',
      String(status),
      'content',
      'application/json',
      'schema',
    );
    return errorsOf(label, schemaAt(ref), body);
  };
}

function errorsOf(label: string, validate: ValidateFunction, body: unknown): string[] {
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (e) =>
      `${label}: body${e.instancePath} ${e.message ?? 'is invalid'}${
        e.keyword !== 'pattern' && Object.keys(e.params).length
          ? ` ${JSON.stringify(e.params)}`
          : ''
      }`,
  );
}
