/** Model and application names (API.md). */
export const NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;
