// client-registry's endpoints, through the one registry client (@mds/registry-client); it implements
// application/ports.ts's EndpointDirectory.
export { createEndpointDirectory } from '@mds/registry-client';
