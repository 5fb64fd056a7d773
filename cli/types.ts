import type { ControllerLevel, ModelLevel } from './levels';

/**
 * The API's answers as the CLI reads them (API.md and docs/api.md). Declared
 * here, not imported from the server: the CLI is a client like any other.
 * Fields the server may not send yet are optional.
 */
export interface Model {
  name: string;
  region: string;
  constraints: string;
  harvestMode?: string;
  availabilitySets?: boolean;
  reprovisionLost?: boolean;
  createdAt?: string;
  /** `GET /v1/models?summary=true` only. */
  summary?: { machines: number; units: number; lastChange: string; access?: string };
}

export interface Hardware {
  arch?: string;
  cores?: number;
  mem?: number;
  rootDisk?: number;
  [key: string]: unknown;
}

export interface Machine {
  id: string;
  base: string;
  life: string;
  status: string;
  message: string;
  /** How many times provisioning has ended in error (absent: never, or an API without it). */
  errorCount?: number;
  instanceId?: string;
  instanceStatus?: string;
  imageId?: string;
  zone?: string;
  instanceType?: string;
  constraints: string;
  hardware?: Hardware;
  units: string[];
  containers: string[];
  placementGroup?: string;
  partition?: number;
  pricePerHour?: number;
  /** When `instanceStatus` was recorded (absent from an API before issue 29). */
  instanceStatusAt?: string;
  privateAddress?: string;
  publicAddress?: string;
  /** A manual machine's `ssh:[user@]host`. */
  placement?: string;
  createdAt?: string;
  updatedAt?: string;
}

export interface Unit {
  machine: string;
  life: string;
  status: string;
  subordinates: string[];
}

/** `GET …/applications/{app}`. */
export interface Application {
  name: string;
  charm: string;
  base: string;
  constraints: string;
  subordinate: boolean;
  life: string;
  createdAt?: string;
}

export interface ApplicationStatus {
  base: string;
  charm?: string;
  constraints: string;
  subordinate: boolean;
  units: Record<string, Unit>;
}

export interface Status {
  model: { name: string; region: string; constraints: string; pricePerHour?: number };
  machines: Record<string, Machine>;
  applications: Record<string, ApplicationStatus>;
}

export interface ConstraintsAnswer {
  constraints: string;
  unsupported?: string[];
}

export interface UnitRef {
  name: string;
  machine: string;
}

/** `GET /v1/whoami`. */
export interface WhoAmI {
  user: string;
  access: ControllerLevel;
}

/** An entry of `GET /v1/users`. */
export interface PoolUser {
  name: string;
  access: ControllerLevel;
}

/** An entry of `GET /v1/models/{model}/access`. */
export interface ModelUser {
  user: string;
  access: ModelLevel;
}

/** An audit entry (API.md "Audit"): never a body, token or password. */
export interface AuditEntry {
  time: string;
  user: string;
  method: string;
  path: string;
  model?: string;
  status: number;
  requestId: string;
  idempotencyKey?: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  cursor?: string;
}
