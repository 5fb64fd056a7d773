import { InstanceProfile, ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { acknowledge } from '../nag';
import { SSM_INSTANCE_POLICY } from '../permissions';

/**
 * The role and instance profile every instance the provisioner launches
 * carries (issue 15): only what the SSM agent needs to register and run the
 * container commands the worker sends (AWS's AmazonSSMManagedInstanceCore),
 * nothing of the provisioner's own resources.
 */
export class InstanceProfileForHosts extends Construct {
  readonly role: Role;
  readonly profile: InstanceProfile;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('ec2.amazonaws.com'),
      description:
        'Instances launched by the provisioner: the SSM agent only (Run Command for containers)',
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName(SSM_INSTANCE_POLICY)],
    });
    acknowledge(
      this.role,
      `IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${SSM_INSTANCE_POLICY}]`,
      'AmazonSSMManagedInstanceCore is AWS’s minimal policy for the SSM agent (register, receive and answer Run Command); AWS keeps it in step with the agent, which a copy would not be',
    );
    this.profile = new InstanceProfile(this, 'Profile', { role: this.role });
  }
}
