/** CPU architectures, in Juju's names (core/arch). */
export const ARCHES = ['amd64', 'arm64', 'ppc64el', 's390x', 'riscv64'] as const;
export type Arch = (typeof ARCHES)[number];

/** The architecture used when neither an `arch` nor an `instance-type` constraint says otherwise. */
export const DEFAULT_ARCH: Arch = 'amd64';

export function isSupportedArch(value: string): value is Arch {
  return (ARCHES as readonly string[]).includes(value);
}

// EC2 names architectures differently (DescribeInstanceTypes, DescribeImages).
const FROM_EC2: Readonly<Record<string, Arch>> = { x86_64: 'amd64', arm64: 'arm64' };
const TO_EC2: Readonly<Partial<Record<Arch, string>>> = { amd64: 'x86_64', arm64: 'arm64' };

/** `x86_64` → `amd64`, `arm64` → `arm64`; undefined for architectures Juju does not run on (i386, …). */
export function archFromEc2(ec2Architecture: string): Arch | undefined {
  return Object.hasOwn(FROM_EC2, ec2Architecture) ? FROM_EC2[ec2Architecture] : undefined;
}

/** `amd64` → `x86_64`, `arm64` → `arm64`; undefined for architectures EC2 does not offer. */
export function archToEc2(arch: string): string | undefined {
  return isSupportedArch(arch) ? TO_EC2[arch] : undefined;
}
