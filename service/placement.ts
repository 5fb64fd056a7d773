import { BadRequestError } from '../functions/errors';
// TEMPORARY until core/ lands.
export function parseMachinePlacement(
  text: string | undefined,
  _count: number,
): { kind: string; text: string } | undefined {
  if (!text) return undefined;
  if (text.startsWith('ssh:')) return { kind: 'ssh', text };
  if (text.startsWith('zone=')) return { kind: 'zone', text };
  throw new BadRequestError(`invalid placement "${text}"`);
}
export function validateBase(base: string): string {
  return base;
}
