import { RemovalPolicy, type CfnElement } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
} from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { TABLE_SCHEMA } from '../../state/schema';
import { acknowledgeTableIndexes } from '../nag';
import { TABLE_ACTIONS } from '../permissions';

export interface StateTableProps {
  tableName: string;
  /** Deletion protection and RETAIN; off only where data is disposable (dev). */
  retain: boolean;
}

const KEY_TYPE = { S: AttributeType.STRING } as const;

/** The provisioner's one table, keyed exactly as `state/schema.ts` says. */
export class StateTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string, props: StateTableProps) {
    super(scope, id);
    const type = KEY_TYPE[TABLE_SCHEMA.attributeType];
    this.table = new Table(this, 'Table', {
      tableName: props.tableName,
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type },
      sortKey: { name: TABLE_SCHEMA.sortKey, type },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      // idempotency records expire after 24 h (state/idempotency.ts)
      timeToLiveAttribute: TABLE_SCHEMA.timeToLiveAttribute,
      deletionProtection: props.retain,
      removalPolicy: props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    for (const index of TABLE_SCHEMA.globalSecondaryIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey, type },
        sortKey: { name: index.sortKey, type },
        projectionType:
          index.projection === 'KEYS_ONLY' ? ProjectionType.KEYS_ONLY : ProjectionType.ALL,
      });
    }
  }

  /** Only the actions the repository uses, on this table and its indexes. */
  grantRepositoryAccess(grantee: IGrantable): void {
    this.table.grant(grantee, ...TABLE_ACTIONS);
    if (Construct.isConstruct(grantee))
      acknowledgeTableIndexes(grantee, this.table.node.defaultChild as CfnElement);
  }
}
