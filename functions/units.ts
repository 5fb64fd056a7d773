import { createHandler } from './http';

// Units arrive with the full API (issue 4).
export const handler = createHandler({});
