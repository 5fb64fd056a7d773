import { PricingClient } from '@aws-sdk/client-pricing';
import type { PricingSender } from '../../activities/pricing';

/**
 * A PricingClient whose `send` is the fake's: InstancePrices pages with the
 * SDK's paginator, which asks for a real client instance.
 */
export function asPricingClient(fake: PricingSender): PricingClient {
  const client = new PricingClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
  });
  client.send = fake.send.bind(fake) as PricingClient['send'];
  return client;
}
