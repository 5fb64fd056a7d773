import { App } from 'aws-cdk-lib';
import { InvalidEnvironmentConfigError, UnknownEnvironmentError } from './config';
import { addProvisionerStack } from './provisioner-app';

/** `cdk.json`'s app: `npx cdk synth -c env=dev|staging|prod`. */
const app = new App();
try {
  addProvisionerStack(app);
} catch (err) {
  if (err instanceof UnknownEnvironmentError || err instanceof InvalidEnvironmentConfigError) {
    // A usage mistake, not a bug: the message says what to do, a stack trace would bury it.
    console.error(`error: ${err.message}`);
    process.exit(1);
  }
  throw err;
}
app.synth();
