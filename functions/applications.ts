import { createHandler } from './http';

// Applications, constraints and relations arrive with the full API (issue 4).
export const handler = createHandler({});
