import type { ConformanceGroup } from '../conformance-check';
import { acknowledgementGroup } from './acknowledgement';
import { basicGetGroup } from './basic-get';
import { competingConsumersGroup } from './competing-consumers';
import { concurrentPublishersGroup } from './concurrent-publishers';
import { crashRecoveryGroup } from './crash-recovery';
import { declarationGroup } from './declaration';
import { delayedDeliveryGroup } from './delayed-delivery';
import { deliveryGuaranteesGroup } from './delivery-guarantees';
import { fairnessGroup } from './fairness';
import { leasesGroup } from './leases';
import { mailboxGroup } from './mailbox';
import { messageTtlGroup } from './message-ttl';
import { modelGroup } from './model-based';
import { orderingGroup } from './ordering';
import { prefetchGroup } from './prefetch';
import { prioritiesGroup } from './priorities';
import { propertiesGroup } from './properties';
import { publishErrorsGroup } from './publish-errors';
import { purgeAndSizeGroup } from './purge-and-size';
import { roundTripGroup } from './round-trip';
import { routingGroup } from './routing';

/** Every group of the suite, in the order `defineTransportSuite` registers them. */
export const conformanceGroups: readonly ConformanceGroup[] = [
  declarationGroup,
  routingGroup,
  roundTripGroup,
  propertiesGroup,
  acknowledgementGroup,
  basicGetGroup,
  purgeAndSizeGroup,
  prefetchGroup,
  orderingGroup,
  prioritiesGroup,
  competingConsumersGroup,
  concurrentPublishersGroup,
  fairnessGroup,
  deliveryGuaranteesGroup,
  publishErrorsGroup,
  delayedDeliveryGroup,
  messageTtlGroup,
  crashRecoveryGroup,
  leasesGroup,
  mailboxGroup,
  modelGroup,
];

export * from './acknowledgement';
export * from './basic-get';
export * from './competing-consumers';
export * from './concurrent-publishers';
export * from './crash-recovery';
export * from './declaration';
export * from './delayed-delivery';
export * from './delivery-guarantees';
export * from './fairness';
export * from './leases';
export * from './mailbox';
export * from './message-ttl';
export * from './model-based';
export * from './ordering';
export * from './prefetch';
export * from './priorities';
export * from './properties';
export * from './publish-errors';
export * from './purge-and-size';
export * from './round-trip';
export * from './routing';
