import { z } from 'zod';
import { Plan } from '../service/views';

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

// The plan the services build is defined beside them (service/views.ts): named here too.
export { Plan, PlannedMachine, type PlanView, type PlannedMachineView } from '../service/views';

export const PlanAnswer = z.object({ plan: Plan }).meta({ id: 'PlanAnswer' });
export type PlanAnswerView = z.infer<typeof PlanAnswer>;
