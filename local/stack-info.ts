/** What `.provisioner/stack.json` holds (API.md, section 2), plus extras tests use. */
export interface StackInfo {
  apiUrl: string;
  token: string;
  temporalAddress: string;
  temporalNamespace: string;
  temporalUiUrl: string;
  dynamodbEndpoint: string;
  ec2Endpoint: string;
  /** The Price List API emulator (synthetic prices for moto's catalogue). */
  pricingEndpoint: string;
  region: string;
  /** Where the user pool answers (moto's cognito-idp) and its JWKS is served. */
  cognitoEndpoint: string;
  userPoolId: string;
  /** An app client allowing USER_PASSWORD_AUTH and refresh tokens. */
  userPoolClientId: string;
  /** moto itself, behind the EC2 proxy. */
  motoEndpoint: string;
  tableName: string;
  /** What the API and worker run (README, "Sources or shipped artifacts"). */
  artifacts?: 'sources' | 'shipped';
  /** Shipped only: the cloud assembly whose bundles the API runs. */
  cdkOut?: string;
  /** Shipped only: the worker as the Dockerfile's command built it. */
  workerApp?: string;
  /** Shipped only: the routes and each function's bundle and environment (local/shipped-api.ts). */
  shippedApiPlan?: string;
  /** Shipped only: the shape of every event each bundle received (local/lambda-host.ts). */
  lambdaEventsFile?: string;
}
