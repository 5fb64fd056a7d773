import { readFileSync } from 'node:fs';
import { areaOf } from './profile';

/**
 * Summarizes a sampled allocation profile (bench/heap-sampling.ts): bytes
 * allocated per function (self) and per area, largest first. Usage:
 * `node --import tsx bench/heap-summary.ts FILE [TOP]`.
 */
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: HeapNode[];
}

export interface HeapSummary {
  totalBytes: number;
  self: Array<{ name: string; bytes: number }>;
  areas: Array<{ name: string; bytes: number }>;
}

export function summarizeHeap(head: HeapNode, top = 25): HeapSummary {
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalBytes = 0;
  const stack: HeapNode[] = [head];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (node.selfSize > 0) {
      const name = `${functionName || '(anonymous)'} [${areaOf(url)} ${url.replace(/^.*\//, '')}:${lineNumber + 1}]`;
      self.set(name, (self.get(name) ?? 0) + node.selfSize);
      const area = areaOf(url);
      areas.set(area, (areas.get(area) ?? 0) + node.selfSize);
      totalBytes += node.selfSize;
    }
    stack.push(...(node.children ?? []));
  }
  const sorted = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, bytes]) => ({ name, bytes }));
  return { totalBytes, self: sorted(self), areas: sorted(areas) };
}

if (require.main === module) {
  const [file, topText] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node --import tsx bench/heap-summary.ts FILE [TOP]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const s = summarizeHeap(profile.head, Number(topText ?? 25));
  const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;
  const pct = (b: number) => `${((100 * b) / s.totalBytes).toFixed(1)} %`;
  process.stdout.write(`sampled allocations: ${mib(s.totalBytes)}\n\nby area:\n`);
  for (const a of s.areas)
    process.stdout.write(
      `  ${pct(a.bytes).padStart(7)}  ${mib(a.bytes).padStart(10)}  ${a.name}\n`,
    );
  process.stdout.write('\nby function (self):\n');
  for (const f of s.self)
    process.stdout.write(
      `  ${pct(f.bytes).padStart(7)}  ${mib(f.bytes).padStart(10)}  ${f.name}\n`,
    );
}
