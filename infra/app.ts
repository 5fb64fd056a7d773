import { App } from 'aws-cdk-lib';
import { addProvisionerStack } from './provisioner-app';

/** `cdk.json`'s app: `npx cdk synth -c env=dev|staging|prod`. */
const app = new App();
addProvisionerStack(app);
app.synth();
