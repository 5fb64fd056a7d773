import { z } from 'zod';

/**
 * Plans (API.md "Plans (dry run)"): the `dryRun` flag of deploy, add-unit
 * and add-machine, and the plan they answer with it. Kept apart from
 * functions/schemas.ts's request and answer schemas, which take the flag.
 */

export const DryRunFlag = z.boolean().meta({
  description:
    'Answer `200` with the plan instead: validated exactly as the real request, nothing written, ' +
    'no workflow started, nothing changed on EC2.',
});

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

export const PlanAnswer = z.object({ plan: Plan }).meta({ id: 'PlanAnswer' });
export type PlanAnswerView = z.infer<typeof PlanAnswer>;
