// TEMPORARY until core/ lands: whitespace-normalised pass-through.
export function canonicalConstraints(text: string): string {
  return text.trim().split(/\s+/).filter(Boolean).join(' ');
}
export function mergeIntoModel(model: string, own: string): string {
  return own || model;
}
