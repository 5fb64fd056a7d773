/** Model and application names (API.md). */
export const NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

/** An AWS region's name (`us-east-1`); whether EC2 offers it is asked separately. */
export const REGION_PATTERN = /^[a-z]{2}(-[a-z]+)+-\d+$/;
