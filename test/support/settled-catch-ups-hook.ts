import { catchUpsSettledWithin, SETTLE_BOUND_MS } from './settled-catch-ups';

afterAll(() => catchUpsSettledWithin(SETTLE_BOUND_MS), SETTLE_BOUND_MS + 10_000);
