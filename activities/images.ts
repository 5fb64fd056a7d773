import { DescribeImagesCommand, type EC2Client } from '@aws-sdk/client-ec2';

/** Canonical's AWS account: the owner of official Ubuntu images. */
export const CANONICAL_OWNER = '099720109477';

export class NoImageError extends Error {
  override readonly name = 'NoImageError';
}

const EC2_ARCH: Record<string, string> = { amd64: 'x86_64', arm64: 'arm64' };

export interface ImageQuery {
  region: string;
  /** e.g. `24.04` */
  version: string;
  /** e.g. `noble` */
  codename: string;
  /** Juju arch: amd64, arm64 */
  arch: string;
}

/** Finds the newest Canonical image for a base and arch, cached per region, base and arch for `ttlMs`. */
export class ImageFinder {
  private readonly cache = new Map<string, { imageId: string; expires: number }>();

  constructor(
    private readonly ec2: EC2Client,
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async find(q: ImageQuery): Promise<string> {
    const key = `${q.region}/${q.version}/${q.arch}`;
    const hit = this.cache.get(key);
    if (hit && hit.expires > this.now()) return hit.imageId;
    const ec2Arch = EC2_ARCH[q.arch];
    const out = ec2Arch
      ? await this.ec2.send(
          new DescribeImagesCommand({
            Owners: [CANONICAL_OWNER],
            Filters: [
              {
                Name: 'name',
                Values: [`ubuntu/images/*/ubuntu-${q.codename}-${q.version}-${q.arch}-server-*`],
              },
              { Name: 'architecture', Values: [ec2Arch] },
              { Name: 'state', Values: ['available'] },
            ],
          }),
        )
      : { Images: [] };
    const newest = (out.Images ?? [])
      .filter((i) => i.ImageId && i.CreationDate)
      .sort(
        (a, b) =>
          (b.CreationDate ?? '').localeCompare(a.CreationDate ?? '') ||
          (a.ImageId ?? '').localeCompare(b.ImageId ?? ''),
      )[0];
    if (!newest?.ImageId) {
      throw new NoImageError(
        `no image found for base "ubuntu@${q.version}" (arch ${q.arch}) in region ${q.region}`,
      );
    }
    this.cache.set(key, { imageId: newest.ImageId, expires: this.now() + this.ttlMs });
    return newest.ImageId;
  }
}
