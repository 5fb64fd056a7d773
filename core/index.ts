export * from './errors';
export * from './arch';
export * from './constraints';
export * from './validator';
export * from './ec2-validator';
