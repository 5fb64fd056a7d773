import { DescribeImagesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import { archToEc2, ubuntuImageNamePattern } from '../core';
import { IMAGES_TTL_MS } from '../core/cache-ttl';
import { fetchLoaded, loadingCache, type LoadingCache } from './ttl-cache';

/** Canonical's AWS account: the owner of official Ubuntu images. */
export const CANONICAL_OWNER = '099720109477';

/** No image for a base and arch in a region: not a zone problem, the machine goes to error at once. */
export class NoImageError extends Error {
  override readonly name = 'NoImageError';
}

export interface ImageQuery {
  region: string;
  /** e.g. `ubuntu@24.04` */
  base: string;
  /** Juju arch: amd64, arm64 */
  arch: string;
}

export function noImageMessage(q: ImageQuery): string {
  return `no image found for base "${q.base}" (arch ${q.arch}) in region ${q.region}`;
}

/**
 * Finds the newest Canonical server image for a base and arch (DESIGN.md
 * "Images"), cached per region, base and arch for `ttlMs`. Concurrent
 * lookups of one key share a DescribeImages call. The EC2 client must be the
 * region's.
 */
export class ImageFinder {
  private readonly cache: LoadingCache<string, ImageQuery>;

  constructor(
    private readonly ec2: EC2Client,
    ttlMs = IMAGES_TTL_MS,
    now: () => number = Date.now,
  ) {
    this.cache = loadingCache({ ttlMs, now, load: (_key, q: ImageQuery) => this.lookup(q) });
  }

  find(q: ImageQuery): Promise<string> {
    const key = `${q.region}/${q.base}/${q.arch}`;
    return fetchLoaded(this.cache, key, q);
  }

  private async lookup(q: ImageQuery): Promise<string> {
    let pattern: string | undefined;
    try {
      pattern = ubuntuImageNamePattern(q.base, q.arch);
    } catch {
      pattern = undefined; // an unparsable base has no image either
    }
    const ec2Arch = archToEc2(q.arch);
    if (!pattern || !ec2Arch) throw new NoImageError(noImageMessage(q));
    const out = await this.ec2.send(
      new DescribeImagesCommand({
        Owners: [CANONICAL_OWNER],
        Filters: [
          { Name: 'name', Values: [pattern] },
          { Name: 'architecture', Values: [ec2Arch] },
          { Name: 'state', Values: ['available'] },
        ],
      }),
    );
    const newest = (out.Images ?? [])
      .filter((i) => i.ImageId && i.CreationDate)
      .sort(
        (a, b) =>
          (b.CreationDate ?? '').localeCompare(a.CreationDate ?? '') ||
          (a.ImageId ?? '').localeCompare(b.ImageId ?? ''),
      )[0];
    if (!newest?.ImageId) throw new NoImageError(noImageMessage(q));
    return newest.ImageId;
  }
}
