/**
 * The names of the tags the provisioner puts on its instances: written by the
 * launch (activities/tags.ts launchTags), read by the sweep, the API and the
 * bench. Names only, so every layer may import them.
 */

/** Tags on every instance the provisioner launches. */
export const TAG_MODEL = 'provisioner:model';
/** The model's uid (ModelRecord.uid): tells a re-created model's instances from the old one's. */
export const TAG_MODEL_UID = 'provisioner:model-uid';
/**
 * The machine an instance was launched for, on instances launched before
 * issue 30 (a CreateTags per instance after launch); still read, never set.
 */
export const TAG_MACHINE = 'provisioner:machine';
/** The launch batch an instance came from (activities/launch-batcher.ts); members map by AmiLaunchIndex. */
export const TAG_LAUNCH_BATCH = 'provisioner:launch-batch';
/** Scopes a deployment's instances (IAM conditions in the cloud use it; the sweep never looks past it). */
export const TAG_DEPLOYMENT = 'provisioner:deployment';
