/**
 * The answers the services build, as zod schemas (what functions/schemas.ts
 * and the OpenAPI document name them, re-exported there) and their types
 * (`z.infer`). They live here, not in functions/, so service/ imports
 * nothing from the HTTP layer above it.
 */
import { z } from 'zod';
import { INSTANCE_STATES, MODEL_LEVELS } from '../core';
import { HARVEST_MODES, type HarvestMode } from '../state/types';

export const HarvestModeSchema = z.enum(HARVEST_MODES as [HarvestMode, ...HarvestMode[]]).meta({
  description: 'Which instances the model may terminate when machines go (Juju harvest mode).',
});

export const LifeSchema = z.enum(['alive', 'dying', 'dead']);

export const Timestamp = z.iso.datetime().meta({ description: 'RFC 3339 UTC time.' });

export const Model = z
  .object({
    name: z.string(),
    region: z.string(),
    constraints: z.string(),
    harvestMode: HarvestModeSchema,
    availabilitySets: z.boolean(),
    reprovisionLost: z.boolean(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Model' });
export type ModelView = z.infer<typeof Model>;

/** What `GET /v1/models?summary=true` adds to each model: Juju's `models` columns in one request. */
export const ModelSummary = z
  .object({
    machines: z.number().int().min(0),
    units: z.number().int().min(0),
    lastChange: Timestamp.meta({
      description: "The latest of the model's creation and its machines' last recorded changes.",
    }),
    access: z.enum(MODEL_LEVELS).optional().meta({
      description: "The caller's access to the model (`admin` for a superuser).",
    }),
  })
  .meta({ id: 'ModelSummary' });
export type ModelSummaryView = z.infer<typeof ModelSummary>;

export const ModelListEntry = Model.extend({
  summary: ModelSummary.optional().meta({ description: 'Only with `?summary=true`.' }),
}).meta({ id: 'ModelListEntry' });
export type ModelListEntryView = z.infer<typeof ModelListEntry>;

export const ConstraintsAnswer = z
  .object({
    constraints: z.string(),
    unsupported: z.array(z.string()).optional().meta({
      description: 'Keys EC2 cannot honour; kept, never dropped, and ignored by provisioning.',
    }),
  })
  .meta({ id: 'Constraints' });
export type ConstraintsView = z.infer<typeof ConstraintsAnswer>;

export const Application = z
  .object({
    name: z.string(),
    charm: z.string(),
    base: z.string(),
    constraints: z.string(),
    subordinate: z.boolean(),
    life: LifeSchema,
    createdAt: Timestamp,
  })
  .meta({ id: 'Application' });
export type ApplicationView = z.infer<typeof Application>;

export const PlacedUnit = z
  .object({ name: z.string(), machine: z.string() })
  .meta({ id: 'PlacedUnit' });
export type PlacedUnitView = z.infer<typeof PlacedUnit>;

const Hardware = z
  .object({
    arch: z.string(),
    cores: z.number().int().min(0).meta({ description: 'vCPUs' }),
    mem: z.number().int().min(0).meta({ description: 'MiB' }),
    rootDisk: z.number().int().min(0).optional().meta({ description: 'MiB' }),
  })
  .meta({ id: 'Hardware' });

export const MACHINE_STATUSES = [
  'pending',
  'allocating',
  'running',
  'error',
  'down',
  'stopping',
] as const;

export const Machine = z
  .object({
    id: z.string(),
    base: z.string(),
    life: LifeSchema,
    status: z.enum(MACHINE_STATUSES),
    message: z.string(),
    errorCount: z.number().int().min(1).optional().meta({
      description:
        'How many times provisioning has ended in `error` (absent: never); a retry that fails again shows one more, whatever its message.',
    }),
    instanceId: z.string().optional(),
    instanceStatus: z
      .enum(INSTANCE_STATES)
      .optional()
      .meta({ description: "EC2's state of the instance; `unknown` when EC2 no longer lists it." }),
    imageId: z.string().optional(),
    zone: z.string().optional(),
    instanceType: z.string().optional(),
    constraints: z.string(),
    hardware: Hardware.optional(),
    placementGroup: z.string().optional().meta({ description: 'Availability-set mode.' }),
    partition: z.number().int().min(1).optional().meta({ description: 'Availability-set mode.' }),
    pricePerHour: z
      .number()
      .min(0)
      .optional()
      .meta({ description: 'USD on-demand price per hour its type was chosen at.' }),
    units: z.array(z.string()),
    containers: z.array(z.string()),
    // what `status` shows besides the state (issue 29); all optional
    instanceStatusAt: Timestamp.optional().meta({
      description:
        'When `instanceStatus` was recorded: at launch, or when the sweep or an EC2 event saw it change.',
    }),
    privateAddress: z.string().optional().meta({ description: "The instance's private IPv4." }),
    publicAddress: z.string().optional().meta({ description: "The instance's public IPv4." }),
    placement: z
      .string()
      .optional()
      .meta({ description: 'A manual machine: its `ssh:[user@]host` directive.' }),
    createdAt: Timestamp.optional(),
    updatedAt: Timestamp.optional().meta({ description: "The machine's last recorded change." }),
  })
  .meta({ id: 'Machine' });
export type MachineView = z.infer<typeof Machine>;

const UnitStatus = z
  .object({
    machine: z.string(),
    life: LifeSchema,
    status: z.enum(['allocating', 'deployed', 'error']),
    subordinates: z.array(z.string()),
  })
  .meta({ id: 'UnitStatus' });

const ApplicationStatus = z
  .object({
    base: z.string(),
    constraints: z.string(),
    subordinate: z.boolean(),
    units: z.record(z.string(), UnitStatus),
  })
  .meta({ id: 'ApplicationStatus' });

export const Status = z
  .object({
    model: z.object({
      name: z.string(),
      region: z.string(),
      constraints: z.string(),
      pricePerHour: z
        .number()
        .min(0)
        .optional()
        .meta({ description: 'Sum over the running machines that carry a price.' }),
    }),
    machines: z.record(z.string(), Machine),
    applications: z.record(z.string(), ApplicationStatus),
  })
  .meta({ id: 'Status' });
export type StatusView = z.infer<typeof Status>;

// ---------------------------------------------------------------- plans (API.md "Plans (dry run)")

export const PlannedMachine = z
  .object({
    id: z.string().nullable().meta({
      description: "The existing machine's id where a unit would go onto one; null: new.",
    }),
    units: z.array(z.string()),
    base: z.string(),
    constraints: z.string().meta({ description: 'Collapsed, canonical.' }),
    zone: z.string().nullable().meta({ description: 'null: not known (see notes).' }),
    instanceType: z
      .string()
      .nullable()
      .meta({ description: 'null for a container or manual machine, or when not known.' }),
    pricePerHour: z
      .number()
      .min(0)
      .nullable()
      .meta({ description: 'On-demand USD; 0 for a container or manual machine; null: unknown.' }),
    placementGroup: z.string().optional().meta({ description: 'Availability-set mode.' }),
    partition: z.number().int().min(1).optional().meta({ description: 'Availability-set mode.' }),
  })
  .meta({ id: 'PlannedMachine' });
export type PlannedMachineView = z.infer<typeof PlannedMachine>;

export const Plan = z
  .object({
    machines: z.array(PlannedMachine),
    pricePerHour: z
      .number()
      .min(0)
      .nullable()
      .meta({ description: 'USD per hour of the new machines; null when a price is unknown.' }),
    pricePerMonth: z
      .number()
      .min(0)
      .nullable()
      .meta({ description: 'pricePerHour × 730, to cents.' }),
    estimatedSeconds: z.number().int().min(0).meta({
      description: 'Until the last planned machine is launched, under the launch budget.',
    }),
    notes: z.array(z.string()).meta({ description: 'What the plan could not know, and waits.' }),
  })
  .meta({ id: 'Plan' });
export type PlanView = z.infer<typeof Plan>;
