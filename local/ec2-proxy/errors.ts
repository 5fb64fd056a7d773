import { randomUUID } from 'node:crypto';
import { descendant, elementText, escapeXml, parseXml, XmlParseError } from './xml';

/**
 * EC2 error answers as AWS writes them: the XML body, the HTTP status and, for
 * the codes the proxy injects, EC2's own message wording (collected from real
 * answers quoted in public bug reports; see the notes on each).
 */

/** Capacity errors: AWS answers these with HTTP 500 (so SDKs retry them as transient). */
export const CAPACITY_ERROR_CODES: ReadonlySet<string> = new Set([
  'InsufficientInstanceCapacity',
  'InsufficientHostCapacity',
  'InsufficientReservedInstanceCapacity',
  'InsufficientCapacity',
]);

const SERVER_ERROR_STATUS: Readonly<Record<string, number>> = {
  InternalError: 500,
  InternalFailure: 500,
  Unavailable: 503,
  ServiceUnavailable: 503,
  RequestLimitExceeded: 503,
};

/** The HTTP status AWS answers an EC2 error code with: 500/503 for server-side codes, else 400. */
export function ec2ErrorStatus(code: string): number {
  if (CAPACITY_ERROR_CODES.has(code)) return 500;
  return SERVER_ERROR_STATUS[code] ?? 400;
}

export function newRequestId(): string {
  return randomUUID();
}

/** EC2's error document (`Response/Errors/Error`, then `RequestID`). */
export function ec2ErrorXml(code: string, message: string, requestId: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Response><Errors><Error><Code>${escapeXml(code)}</Code>` +
    `<Message>${escapeXml(message)}</Message></Error></Errors>` +
    `<RequestID>${escapeXml(requestId)}</RequestID></Response>`
  );
}

/** The code of an EC2 error document; undefined when the body is not one. */
export function ec2ErrorCode(xml: string): string | undefined {
  try {
    const code = descendant(parseXml(xml), 'Errors', 'Error', 'Code');
    return code && elementText(xml, code);
  } catch (err) {
    if (err instanceof XmlParseError) return undefined;
    throw err;
  }
}

/** What a RunInstances call asked for, as far as an error message needs it. */
export interface LaunchContext {
  readonly zone: string;
  readonly instanceType: string;
  /** Zones EC2 would suggest instead (healthy, not faulted), in name order. */
  readonly alternativeZones: readonly string[];
  /** The subnet the launch goes into, when known. */
  readonly subnetId?: string;
}

/**
 * EC2's message for an injected fault. Codes without a known wording get a
 * plain description naming the zone.
 */
export function faultMessage(code: string, ctx: LaunchContext): string {
  const others = ctx.alternativeZones.join(', ');
  switch (code) {
    case 'InsufficientInstanceCapacity':
      // Real answer (terraform-provider-aws#1496): "We currently do not have sufficient m4.4xlarge
      // capacity in the Availability Zone you requested (ap-northeast-1d). Our system will be
      // working on provisioning additional capacity. You can currently get m4.4xlarge capacity by
      // not specifying an Availability Zone in your request or choosing ap-northeast-1c, ap-northeast-1a."
      return (
        `We currently do not have sufficient ${ctx.instanceType} capacity in the Availability Zone you requested (${ctx.zone}). ` +
        'Our system will be working on provisioning additional capacity.' +
        (others
          ? ` You can currently get ${ctx.instanceType} capacity by not specifying an Availability Zone in your request or choosing ${others}.`
          : '')
      );
    case 'Unsupported':
      // Real answer (skyplane#172 and others): "Your requested instance type (m5.8xlarge) is not
      // supported in your requested Availability Zone (us-east-1e). Please retry your request by not
      // specifying an Availability Zone or choosing us-east-1a, us-east-1b, …"
      return (
        `Your requested instance type (${ctx.instanceType}) is not supported in your requested Availability Zone (${ctx.zone}). ` +
        (others
          ? `Please retry your request by not specifying an Availability Zone or choosing ${others}.`
          : 'Please retry your request by not specifying an Availability Zone.')
      );
    case 'InsufficientFreeAddressesInSubnet':
      // Real answer (osbuild-composer#1575): "There are not enough free addresses in subnet
      // 'subnet-04a176042c3118735' to satisfy the requested number of instances."
      return `There are not enough free addresses in subnet '${ctx.subnetId ?? 'unknown'}' to satisfy the requested number of instances.`;
    case 'InsufficientHostCapacity':
    case 'InsufficientReservedInstanceCapacity':
    case 'InsufficientCapacity':
      // EC2's short capacity wording (seen for capacity codes without a zone hint).
      return 'Insufficient capacity.';
    // The two limit errors are zone-independent; EC2 names the caller's actual numbers, which
    // the proxy does not know, so these fixed ones stand in.
    case 'InstanceLimitExceeded':
      return (
        'You have requested more instances (21) than your current instance limit of 20 allows for the specified instance type. ' +
        'Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.'
      );
    case 'VcpuLimitExceeded':
      return (
        'You have requested more vCPU capacity than your current vCPU limit of 32 allows for the instance bucket that the specified instance type belongs to. ' +
        'Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.'
      );
    case 'InternalError':
      return 'An internal error has occurred';
    default:
      return `${code} in the Availability Zone you requested (${ctx.zone}).`;
  }
}

export const REQUEST_LIMIT_EXCEEDED = {
  code: 'RequestLimitExceeded',
  message: 'Request limit exceeded.',
} as const;

export const IDEMPOTENT_PARAMETER_MISMATCH = {
  code: 'IdempotentParameterMismatch',
  // Real answer (ubicloud#5898, rust-lang/bors#830).
  message:
    'Arguments on this idempotent request are inconsistent with arguments used in previous request(s).',
} as const;

export const IDEMPOTENT_INSTANCE_TERMINATED = {
  code: 'IdempotentInstanceTerminated',
  // Real answer (boto3#4406, EC2 since January 2025).
  message:
    'The client token you have provided is associated with a terminated instance. Please use a different client token.',
} as const;

/**
 * EC2's message for an error injected on a whole action (`errors` faults):
 * EC2's own wording where the proxy knows it, else a plain description.
 */
export function actionFaultMessage(code: string, action: string, instanceId?: string): string {
  switch (code) {
    case 'OperationNotPermitted':
      // Real answer (aws-cli#2183 and others) to terminating a protected instance.
      return `The instance '${instanceId ?? 'unknown'}' may not be terminated. Modify its 'disableApiTermination' instance attribute and try again.`;
    case 'UnauthorizedOperation':
      return 'You are not authorized to perform this operation.';
    case 'AuthFailure':
      return 'AWS was not able to validate the provided access credentials';
    case 'OptInRequired':
      return 'You are not subscribed to this service. Please go to http://aws.amazon.com to subscribe.';
    default:
      return `${code} (injected for ${action}).`;
  }
}
