import {
  CreatePlacementGroupCommand,
  DeletePlacementGroupCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { PARTITION_COUNT } from '../core';
import { ec2ErrorCode } from './errors';

/** How long a group this worker created (or found) is taken to exist without asking EC2 again. */
const KNOWN_FOR_MS = 60_000;

/**
 * The partition placement groups of availability-set mode (issue 14): one
 * per distribution group, created on first use and deleted with the group's
 * last machine. Creating is idempotent (a group that exists — made by a
 * racing worker or before a crash — answers `InvalidPlacementGroup.Duplicate`,
 * which is success), and launches of one group share one creation per
 * worker for a minute, so a thousand launches make one CreatePlacementGroup.
 */
export class PlacementGroups {
  private readonly known = new Map<string, { at: number; ready: Promise<void> }>();

  constructor(
    private readonly ec2ForRegion: (region: string) => { ec2: EC2Client },
    private readonly now: () => number = Date.now,
  ) {}

  private key(region: string, name: string): string {
    return `${region}\n${name}`;
  }

  /** Makes sure the group exists (strategy `partition`, seven partitions). */
  ensure(region: string, name: string): Promise<void> {
    const key = this.key(region, name);
    const cached = this.known.get(key);
    if (cached && this.now() - cached.at < KNOWN_FOR_MS) return cached.ready;
    const ready = this.create(region, name);
    this.known.set(key, { at: this.now(), ready });
    // a failed creation is not remembered: the next launch asks again
    ready.catch(() => {
      if (this.known.get(key)?.ready === ready) this.known.delete(key);
    });
    return ready;
  }

  /** Forgets that the group exists (EC2 said it does not: deleted meanwhile). */
  forget(region: string, name: string): void {
    this.known.delete(this.key(region, name));
  }

  private async create(region: string, name: string): Promise<void> {
    try {
      await this.ec2ForRegion(region).ec2.send(
        new CreatePlacementGroupCommand({
          GroupName: name,
          Strategy: 'partition',
          PartitionCount: PARTITION_COUNT,
        }),
      );
    } catch (err) {
      if (ec2ErrorCode(err) !== 'InvalidPlacementGroup.Duplicate') throw err;
    }
  }

  /**
   * Deletes the group. `gone`: deleted now or already absent; `in-use`: EC2
   * still counts an instance in it (one not yet terminated), so it is left
   * for a later removal.
   */
  async delete(region: string, name: string): Promise<'gone' | 'in-use'> {
    this.forget(region, name);
    try {
      await this.ec2ForRegion(region).ec2.send(
        new DeletePlacementGroupCommand({ GroupName: name }),
      );
      return 'gone';
    } catch (err) {
      const code = ec2ErrorCode(err);
      if (code === 'InvalidPlacementGroup.Unknown') return 'gone';
      if (code === 'InvalidPlacementGroup.InUse') return 'in-use';
      throw err;
    }
  }
}
